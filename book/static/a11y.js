// Accessible names for what the book's theme, bibliography and widget renderer draw without
// one (tests/test_accessibility.py runs axe-core over every page). Widgets render after the
// page loads, and a static explorer shows another frame on every move: so this runs again
// whenever the page changes, at most once a frame.
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

  // What a control shows now: a slider's readout, a menu's choice, the pressed button.
  function controlValue(control) {
    var readout = control.querySelector(".widget-readout");
    if (readout) return text(readout);
    var select = control.querySelector("select");
    if (select && select.selectedIndex >= 0) return text(select.options[select.selectedIndex]);
    return text(control.querySelector("button.mod-active"));
  }

  var CONTROLS = ".widget-slider, .widget-dropdown, .widget-toggle-buttons";

  // A slider handle (role="slider") is named by its label and says its stop, not its index.
  function nameSliders() {
    document.querySelectorAll(".widget-slider").forEach(function (slider) {
      var handle = slider.querySelector(".noUi-handle");
      if (!handle) return;
      var label = text(slider.querySelector(".widget-label"));
      if (label) handle.setAttribute("aria-label", label);
      var value = controlValue(slider);
      if (value) handle.setAttribute("aria-valuetext", value);
    });
    document.querySelectorAll(".widget-toggle-buttons").forEach(function (group) {
      var label = text(group.querySelector(".widget-label"));
      var buttons = group.querySelector(".widget-toggle-button, .widget-toggle-buttons > div");
      var box = group.querySelector("[role='group'], .btn-group") || (buttons && buttons.parentElement);
      if (label && box) {
        box.setAttribute("role", "group");
        box.setAttribute("aria-label", label);
      }
      group.querySelectorAll("button").forEach(function (button) {
        button.setAttribute("aria-pressed", button.classList.contains("mod-active") ? "true" : "false");
      });
    });
  }

  // An explorer's frame: the section it sits in and what its controls are set to.
  function describeFrames() {
    document.querySelectorAll("img.widget-image").forEach(function (image) {
      var box = image.parentElement;
      while (box && !box.querySelector(CONTROLS)) box = box.parentElement;
      if (!box) {
        if (!image.hasAttribute("alt")) image.setAttribute("alt", "Figure");
        return;
      }
      var section = box.closest("section");
      var heading = section ? text(section.querySelector("h1, h2, h3, h4")) : "";
      var settings = [];
      box.querySelectorAll(CONTROLS).forEach(function (control) {
        var label = text(control.querySelector(".widget-label"));
        var value = controlValue(control);
        if (value) settings.push((label ? label + " " : "") + value);
      });
      var alt = "Explorer figure" + (heading ? " (" + heading + ")" : "") +
        (settings.length ? ": " + settings.join(", ") : "");
      if (image.getAttribute("alt") !== alt) image.setAttribute("alt", alt);
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

  function label() {
    markSidebar();
    nameToggles();
    fixBibliography();
    nameSliders();
    describeFrames();
  }

  var queued = false;
  function queue() {
    if (queued) return;
    queued = true;
    window.requestAnimationFrame(function () {
      queued = false;
      label();
    });
  }

  // Only the changes widgets make (new elements, a frame shown, a readout's text): the
  // attributes set here are not watched, so labelling never wakes itself.
  new MutationObserver(queue).observe(document.documentElement, {
    subtree: true,
    childList: true,
    characterData: true,
    attributes: true,
    attributeFilter: ["class", "style"],
  });
  document.addEventListener("DOMContentLoaded", queue);
  document.addEventListener("change", queue, true);
})();
