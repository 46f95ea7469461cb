// Compatibility shims for the static book's widgets; loaded before FontAwesome and MathJax.
(function () {
  // The book theme's FontAwesome swaps <i> icons for <svg>; widget buttons (ToggleButtons,
  // Play) then stop responding. Nesting the svg inside the <i> keeps them working.
  window.FontAwesomeConfig = { autoReplaceSvg: "nest" };

  // The widget renderer's two modules each ask for its icon fonts beside themselves, which
  // require.js would place under the page's folder (404s in every lesson): both live in the
  // html-manager folder beside this script (read as require.js's configuration). Both are
  // defined by name in embed-amd.js, so require.js never fetches them by these paths.
  var here = document.currentScript && document.currentScript.src;
  if (here && !window.require) {
    var folder = here.replace(/[^/]*$/, "html-manager");
    window.require = {
      paths: {
        "@jupyter-widgets/html-manager/dist": folder,
        "@jupyter-widgets/html-manager": folder + "/embed-amd",
      },
    };
  }

  // ipywidgets 8 typesets labels with MathJax 2's `MathJax.Hub.Queue`; the book serves
  // MathJax 3. Give every MathJax object the page installs a Hub that uses the v3 API.
  var current;
  var hub = {
    Queue: function (job) {
      var element = job && job[2];
      if (element && current && current.typesetPromise) {
        current.typesetPromise([element]).catch(function () {});
      }
    },
  };
  Object.defineProperty(window, "MathJax", {
    configurable: true,
    get: function () { return current; },
    set: function (value) {
      current = value;
      if (value && typeof value === "object" && !value.Hub) value.Hub = hub;
    },
  });
})();
