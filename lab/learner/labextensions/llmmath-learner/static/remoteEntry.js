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
 *
 * jupyterlab-myst shows a Markdown value of {eval} (a lesson's link to its exercise) in a box of
 * its own that drops the page's link colour and breaks the line's spacing: LINK_CSS makes such
 * a link look like every other link of the page, in the line's flow.
 */
(function () {
  "use strict";
  const NAME = "llmmath-learner";
  const NO_FAILURE = "No visible check fails.";
  const DETAIL =
    "Each test cell's line says what its checks confirmed: consistent (what defines your " +
    "answers, with your own numbers) or plausible (some only in range). Neither checks your " +
    "values: the hidden tests do, when your notebook is graded.";

  const LINK_CSS = `
    .myst-RenderedExpression a { color: var(--jp-content-link-color); text-decoration: underline; }
    .not-prose.inline-block:has(> .myst-RenderedExpression .jp-RenderedMySTMarkdown),
    .myst-RenderedExpression:has(.jp-RenderedMySTMarkdown),
    .myst-RenderedExpression .jp-RenderedMySTMarkdown,
    .myst-RenderedExpression .jp-RenderedMySTMarkdown > p { display: inline; margin: 0; padding: 0; }
  `;

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
    id: `${NAME}:learner`,
    description:
      "Validate never calls values only the hidden tests check a success; a lesson's link to " +
      "its exercise looks like a link.",
    autoStart: true,
    activate: () => {
      const style = document.createElement("style");
      style.id = `${NAME}-links`;
      style.textContent = LINK_CSS;
      document.head.append(style);
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
