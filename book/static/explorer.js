// The static book's explorers (#45): plain HTML that llmmath.display.widgets.common
// (StaticExplorer) writes at build time, every frame listed in the page. Moving a control
// shows the frame for the controls' stops, says its settings and numbers in the image's alt,
// and announces what it shows in the explorer's live region. Loaded (deferred) only by pages
// that have an explorer (book/_ext/lean_pages.py); no other script needed.
(function () {
  "use strict";

  function text(element) {
    return element ? element.textContent.replace(/\s+/g, " ").replace(/#$/, "").trim() : "";
  }

  // The stop a control shows now, as an index and as its label.
  function position(control) {
    if (control.tagName === "SELECT") return control.selectedIndex;
    if (control.tagName === "INPUT") return control.valueAsNumber;
    var chosen = control.querySelector("input:checked");
    return chosen ? Number(chosen.value) : 0;
  }

  function shownLabel(control) {
    if (control.tagName === "SELECT") return text(control.options[control.selectedIndex]);
    if (control.tagName === "INPUT") return JSON.parse(control.dataset.labels)[position(control)];
    return text(control.querySelector("input:checked + span"));
  }

  function controlName(control) {
    if (control.tagName === "FIELDSET") return text(control.querySelector("legend"));
    return text(control.parentElement.querySelector("label.explorer-label"));
  }

  function setUp(box) {
    var frames = JSON.parse(box.querySelector("script.explorer-frames").textContent);
    var controls = Array.prototype.slice.call(box.querySelectorAll("[data-level]"));
    controls.sort(function (a, b) { return a.dataset.level - b.dataset.level; });
    var view = box.querySelector(".explorer-view");
    var region = box.querySelector(".frame-announcer");
    var section = box.closest("section");
    var heading = section ? text(section.querySelector("h1, h2, h3, h4")) : "";
    var wanted = null;  // the src of the frame the controls name now

    function show(announce) {
      var at = 0;
      var settings = [];
      controls.forEach(function (control) {
        at += position(control) * Number(control.dataset.stride);
        var label = shownLabel(control);
        settings.push(controlName(control) + " " + label);
        if (control.type === "range") {
          control.setAttribute("aria-valuetext", label);
          control.parentElement.querySelector("output").textContent = label;
        }
      });
      var frame = frames[at];
      if (frame.html !== undefined) {
        var panel = view.querySelector(".explorer-panel");
        if (panel.innerHTML !== frame.html) panel.innerHTML = frame.html;
        return;
      }
      var image = view.querySelector("img");
      var alt = "Explorer figure" + (heading ? " (" + heading + ")" : "") +
        (settings.length ? ", " + settings.join(", ") : "") +
        (frame.said ? ". It shows: " + frame.said : "");
      wanted = frame.src;
      function present() {
        if (wanted !== frame.src) return;  // a later move asked for another frame
        if (image.getAttribute("src") !== frame.src) image.setAttribute("src", frame.src);
        image.setAttribute("alt", alt);
        if (announce && frame.said) region.textContent = frame.said;
      }
      if (image.getAttribute("src") === frame.src) return present();
      // The frame shown stays until the next has arrived: no blank between frames, and a
      // quick run of moves lets each frame's request finish (none is cut off half way).
      var loader = new Image();
      loader.onload = present;
      loader.onerror = present;  // shown broken, as the browser would show it
      loader.src = frame.src;
    }

    box.addEventListener("input", function () { show(true); });
    box.addEventListener("change", function () { show(true); });
    // A frame opens at full size when tapped (a phone's column shrinks its labels).
    box.addEventListener("click", function (event) {
      if (event.target instanceof HTMLImageElement && event.target.closest(".explorer-view")) {
        window.open(event.target.src, "_blank", "noopener");
      }
    });
    show(false);
    box.setAttribute("data-ready", "");
  }

  function setUpAll() {
    document.querySelectorAll(".llm-explorer:not([data-ready])").forEach(setUp);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUpAll);
  else setUpAll();
})();
