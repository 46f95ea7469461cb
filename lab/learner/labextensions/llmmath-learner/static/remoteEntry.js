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
 *
 * A lesson links the book's pages at a term (book/glossary.md#glossary-decode, served so by
 * lab/learner/myst_links.py). JupyterLab opens a linked page with its default viewer, here
 * Jupytext's notebook (lab/overrides.json: lessons open runnable), so a glossary link started
 * a kernel the page never uses, marked the page modified when the kernel's language arrived,
 * and showed its top: the link's #label is left to the viewer, and a notebook finds only the
 * headings it names itself. A click on a link to a book page opens it here instead, as a
 * rendered page (Markdown Preview, which jupyterlab-myst renders): no kernel, nothing to save
 * (and the server refuses a save to a course page), scrolled to the element jupyterlab-myst
 * gives the label's id. A link to another lesson's label opens that lesson as a notebook, as
 * before, and scrolls it to the label too.
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

  // book/x.md in `make lab`; <course>/book/x.md on the hub, whose servers' root is the home
  const BOOK_PAGE = /^(?:[^/]+\/)?book\/[^/]+\.md$/;
  const LESSON = /^(?:[^/]+\/)?lessons\/[^/]+\.md$/;
  const RENDERED = "Markdown Preview";
  const FIND_LABEL_MS = 60000; // a long page renders in a second or two; a busy machine, more

  /** The {path, id} of the file a plain click on a rendered Markdown link opens, else null.
   * A local link's href is the file's download URL (<base>files/<path>?_xsrf=..#label), which
   * rendermime's link handler opens in JupyterLab on a click of its own. */
  function localLink(app, event) {
    if (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) {
      return null;
    }
    const anchor = event.target instanceof Element ? event.target.closest("a[href]") : null;
    if (!anchor || !anchor.closest(".jp-MarkdownCell, .jp-MarkdownViewer, .myst")) return null;
    const base = new URL(app.serviceManager.serverSettings.baseUrl, window.location.href);
    const files = `${base.pathname.replace(/\/?$/, "/")}files/`;
    if (anchor.origin !== base.origin || !anchor.pathname.startsWith(files)) return null;
    const path = decodeURIComponent(anchor.pathname.slice(files.length));
    return { path, label: anchor.hash.replace(/^#/, "") };
  }

  /** Scroll ``widget`` to the element with id ``label`` once its page has rendered it. */
  function scrollToLabel(widget, label) {
    const find = () => widget.node.querySelector(`[id="${CSS.escape(label)}"]`);
    const found = find();
    if (found) {
      found.scrollIntoView({ block: "start" });
      return;
    }
    const observer = new MutationObserver(() => {
      const element = find();
      if (element) {
        observer.disconnect();
        element.scrollIntoView({ block: "start" });
      }
    });
    observer.observe(widget.node, { childList: true, subtree: true });
    setTimeout(() => observer.disconnect(), FIND_LABEL_MS);
  }

  async function openBookPage(app, path, label) {
    const widget = await app.commands.execute("docmanager:open", { path, factory: RENDERED });
    if (!widget) return;
    app.shell.activateById(widget.id);
    if (label) scrollToLabel(widget, label);
  }

  /** Once the tab showing ``path`` is the current one, scroll it to ``label``. */
  function scrollWhenShown(app, path, label) {
    const started = Date.now();
    const timer = setInterval(() => {
      const tab = app.shell.currentWidget;
      if (tab && tab.context && tab.context.path === path) {
        clearInterval(timer);
        scrollToLabel(tab, label);
      } else if (Date.now() - started > FIND_LABEL_MS) {
        clearInterval(timer);
      }
    }, 100);
  }

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
      "its exercise looks like a link; a link to a book page opens it rendered, at its label; one to a lesson, at its label.",
    autoStart: true,
    activate: (app) => {
      // Capture: before the link's own click handler opens the page as a notebook.
      document.addEventListener(
        "click",
        (event) => {
          const link = localLink(app, event);
          if (!link) return;
          if (BOOK_PAGE.test(link.path)) {
            event.preventDefault();
            event.stopPropagation();
            openBookPage(app, link.path, link.label).catch((error) => console.error(error));
          } else if (LESSON.test(link.path) && link.label) {
            // The lesson opens as a notebook, as it should; JupyterLab's notebook looks the
            // fragment up among the ids it gives headings itself, never a MyST label's.
            scrollWhenShown(app, link.path, link.label);
          }
        },
        true,
      );
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
