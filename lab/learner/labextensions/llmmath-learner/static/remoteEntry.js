/* The learner's JupyterLab extension (lab/learner/jupyter_server_config.py puts this folder on
 * LabApp.extra_labextensions_path). Hand-written, no build step: JupyterLab loads a federated
 * extension by running this script, then calls window._JUPYTERLAB[name].init(shareScope) and
 * .get("./extension"), whose factory returns the module holding the plugins. It uses no shared
 * package, so it needs none of webpack's machinery.
 *
 * nbgrader's Validate (0.9.6) builds its dialog in the browser and, when no test cell fails,
 * says "Success! Your notebook passes all the tests." - a text fixed in its labextension (the
 * Validator's traitlets configure only the command line's warnings). Here the visible checks
 * test what defines each answer (or only that it is plausible) and the hidden tests, absent
 * from the learner's copy, check the values: so when that dialog appears, its words are
 * replaced with what was checked (tests/test_lab.py reads the dialog).
 */
(function () {
  "use strict";
  const NAME = "llmmath-learner";
  const NO_FAILURE = "No visible check fails.";
  const DETAIL =
    "Each test cell's line says what its checks confirmed: consistent (what defines your " +
    "answers, with your own numbers) or plausible (some only in range). Neither checks your " +
    "values: the hidden tests do, when your notebook is graded.";

  function reword(message) {
    if (message.dataset.llmmathReworded) return;
    message.dataset.llmmathReworded = "true";
    const first = document.createElement("p");
    first.textContent = NO_FAILURE;
    const second = document.createElement("p");
    second.textContent = DETAIL;
    message.replaceChildren(first, second);
  }

  const plugin = {
    id: `${NAME}:validate-message`,
    description: "Validate never calls values only the hidden tests check a success.",
    autoStart: true,
    activate: () => {
      // The dialog is built whole, then attached: reworded in the same task, before paint.
      const observer = new MutationObserver(() => {
        const message = document.getElementById("validation-message");
        if (message && message.classList.contains("validation-success")) reword(message);
      });
      observer.observe(document.body, { childList: true, subtree: true });
    },
  };

  const modules = { "./extension": { __esModule: true, default: [plugin] } };
  window._JUPYTERLAB = window._JUPYTERLAB || {};
  window._JUPYTERLAB[NAME] = {
    init: () => Promise.resolve(),
    get: (module) =>
      module in modules
        ? Promise.resolve(() => modules[module])
        : Promise.reject(new Error(`${NAME} has no module ${module}`)),
  };
})();
