// Accessible names for what the book's theme and bibliography draw without one, and a Tab
// stop for display maths that scrolls (tests/test_accessibility.py runs axe-core over every
// page). The explorers' controls, alt text and live region are explorer.js's.
(function () {
  "use strict";

  function text(element) {
    return element ? element.textContent.replace(/\s+/g, " ").replace(/#$/, "").trim() : "";
  }

  // The sidebar's expand toggles (<summary> holding only an icon): say what they open.
  function nameToggles() {
    document.querySelectorAll("summary").forEach(function (summary) {
      if (text(summary) || summary.hasAttribute("aria-label")) return;
      var item = summary.closest("li");
      var link = item && item.querySelector(":scope > a");
      summary.setAttribute("aria-label", "Sections of " + (text(link) || "this chapter"));
    });
  }

  // sphinxcontrib-bibtex marks entries role="doc-biblioentry" (deprecated in DPUB-ARIA 1.1)
  // inside role="list": a list needs list items.
  function fixBibliography() {
    document.querySelectorAll('[role="doc-biblioentry"]').forEach(function (entry) {
      entry.setAttribute("role", "listitem");
    });
  }

  // The left sidebar (the book's title, search and table of contents) is a landmark of its
  // own, so that nothing on the page sits outside one.
  function markSidebar() {
    var sidebar = document.querySelector(".bd-sidebar-primary");
    if (sidebar && !sidebar.hasAttribute("role")) {
      sidebar.setAttribute("role", "complementary");
      sidebar.setAttribute("aria-label", "The book's contents");
    }
  }

  // A lesson figure shrinks to a phone's column (its labels to 4 px): a tap opens it at full
  // size (an explorer's frame: explorer.js).
  function linkFigures() {
    document.querySelectorAll(".cell_output img:not(.explorer-frame)").forEach(function (image) {
      if (image.closest("a")) return;
      var link = document.createElement("a");
      link.className = "enlarge";
      link.href = image.currentSrc || image.src;
      image.parentNode.insertBefore(link, image);
      link.appendChild(image);
    });
  }

  // Display maths wider than the column scrolls sideways (course.css): a keyboard reaches it
  // (a Tab stop) when it scrolls. MathJax's menu made every formula a Tab stop; the book loads
  // MathJax without its menu (scripts/vendor_js.py), so only those that need one get it.
  function focusableWideMaths() {
    document.querySelectorAll('mjx-container[display="true"]').forEach(function (maths) {
      if (maths.scrollWidth > maths.clientWidth) maths.setAttribute("tabindex", "0");
      else maths.removeAttribute("tabindex");
    });
  }

  function afterMaths() {
    var startup = window.MathJax && window.MathJax.startup;
    if (startup && startup.promise) startup.promise.then(focusableWideMaths);
  }

  function label() {
    markSidebar();
    linkFigures();
    nameToggles();
    fixBibliography();
  }

  document.addEventListener("DOMContentLoaded", label);
  window.addEventListener("load", label);  // what the theme's scripts drew after
  window.addEventListener("load", afterMaths);  // MathJax (deferred) has started by then
  window.addEventListener("resize", afterMaths);
})();
