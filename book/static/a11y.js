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
    // A slider's readout is typed into by ipywidgets (contenteditable): typing changed the
    // label but not the figure, and Enter blanked it. The static book's stops are moved by
    // the handle; the readout only shows where it is.
    document.querySelectorAll(".widget-slider .widget-readout[contenteditable='true']").forEach(
      function (readout) {
        readout.setAttribute("contenteditable", "false");
      }
    );
    // A row of toggle buttons is one choice: a radio group, one Tab stop (the chosen button),
    // arrow keys move the choice (WAI-ARIA's radio group pattern).
    document.querySelectorAll(".widget-toggle-buttons").forEach(function (group) {
      var label = text(group.querySelector(".widget-label"));
      var first = group.querySelector("button");
      var box = first && first.parentElement;
      if (!box) return;
      box.setAttribute("role", "radiogroup");
      if (label) box.setAttribute("aria-label", label);
      var buttons = box.querySelectorAll("button");
      var chosen = box.querySelector("button.mod-active") || buttons[0];
      buttons.forEach(function (button) {
        var on = button === chosen;
        button.setAttribute("role", "radio");
        button.removeAttribute("aria-pressed");
        button.setAttribute("aria-checked", on ? "true" : "false");
        button.setAttribute("tabindex", on ? "0" : "-1");
      });
      if (!box.hasAttribute("data-arrows")) {
        box.setAttribute("data-arrows", "");
        box.addEventListener("keydown", moveChoice);
      }
    });
  }

  var STEPS = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 };

  function moveChoice(event) {
    var step = STEPS[event.key];
    var buttons = Array.prototype.slice.call(event.currentTarget.querySelectorAll("button"));
    var at = buttons.indexOf(document.activeElement);
    var to = -1;
    if (step && at >= 0) to = (at + step + buttons.length) % buttons.length;
    else if (event.key === "Home") to = 0;
    else if (event.key === "End") to = buttons.length - 1;
    if (to < 0) return;
    event.preventDefault();
    buttons[to].click();
    buttons[to].focus();
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
      // What the frame says (its titles and readouts), written by the build into the
      // frame's URL fragment (llmmath.display.widgets.common.FrameFiles.image).
      var src = image.getAttribute("src") || "";
      var hash = src.indexOf("#");
      var said = hash >= 0 ? decodeURIComponent(src.slice(hash + 1)) : "";
      var alt = "Explorer figure" + (heading ? " (" + heading + ")" : "") +
        (settings.length ? ", " + settings.join(", ") : "") + (said ? ". It shows: " + said : "");
      if (image.getAttribute("alt") === alt) return;
      image.setAttribute("alt", alt);
      announce(box, said);
    });
  }

  // A polite live region per explorer: a screen reader says what the new frame shows after a
  // control moves (not when the page loads).
  function announce(box, said) {
    var region = box.querySelector(":scope > .frame-announcer");
    if (!region) {
      region = document.createElement("div");
      region.className = "frame-announcer visually-hidden";
      region.setAttribute("aria-live", "polite");
      region.setAttribute("role", "status");
      box.appendChild(region);
      return;
    }
    if (said && region.textContent !== said) region.textContent = said;
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
  // size. An explorer's frame opens the frame shown.
  function linkFigures() {
    document.querySelectorAll(".cell_output img:not(.widget-image)").forEach(function (image) {
      if (image.closest("a")) return;
      var link = document.createElement("a");
      link.className = "enlarge";
      link.href = image.currentSrc || image.src;
      image.parentNode.insertBefore(link, image);
      link.appendChild(image);
    });
  }

  document.addEventListener("click", function (event) {
    var image = event.target;
    if (image instanceof HTMLImageElement && image.classList.contains("widget-image")) {
      window.open(image.src.split("#")[0], "_blank", "noopener");
    }
  });

  function label() {
    markSidebar();
    linkFigures();
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
