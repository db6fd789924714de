import { parseHash } from "./router.ts";
import { getToken, setToken } from "./token.ts";
import { markRouted, setViewState, showError } from "./view-state.ts";
import { clusterView } from "./views/cluster.ts";
import { diffView } from "./views/diff.ts";
import { homeView } from "./views/home.ts";
import { liveView } from "./views/live.ts";
import { timelineView } from "./views/timeline.ts";

/**
 * The history explorer: one page, routed by the URL's hash. Each route
 * change aborts the previous view's requests and streams.
 */
const main = document.getElementById("view") as HTMLElement;
let current: AbortController | undefined;

function route(): void {
  current?.abort();
  const controller = new AbortController();
  current = controller;
  const { view, path, query } = parseHash(location.hash);
  main.dataset.view = view;
  setViewState(main, "loading");
  for (const a of document.querySelectorAll<HTMLAnchorElement>("nav a[data-nav]")) {
    if (a.dataset.nav === view) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  const signal = controller.signal;
  const done = (p: Promise<void> | void) =>
    Promise.resolve(p).catch((err: unknown) => {
      if (!signal.aborted) showError(main, main, err instanceof Error ? err.message : String(err));
    });
  switch (view) {
    case "timeline":
      void done(timelineView(main, path, query, signal));
      break;
    case "cluster":
      void done(clusterView(main, query, signal));
      break;
    case "diff":
      void done(diffView(main, query, signal));
      break;
    case "live":
      void done(liveView(main, query, signal));
      break;
    case "home":
      void done(homeView(main, signal));
      break;
    default:
      main.dataset.view = "home";
      showError(main, main, `No view "${view}": see the links above.`);
  }
}

/** The token field: saved in sessionStorage, sent as X-Nomad-Token; saving re-reads the view with it. */
function tokenField(): void {
  const form = document.getElementById("token-form") as HTMLFormElement;
  const input = document.getElementById("acl-token") as HTMLInputElement;
  const clear = document.getElementById("token-clear") as HTMLButtonElement;
  const state = document.getElementById("token-state") as HTMLElement;
  const show = () => {
    state.textContent = getToken() === "" ? "no token" : "token set";
  };
  input.value = getToken();
  show();
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    setToken(input.value.trim());
    show();
    route();
  });
  clear.addEventListener("click", () => {
    input.value = "";
    setToken("");
    show();
    route();
  });
}

tokenField();
// The skip link must not change the hash: the hash is the route.
document.getElementById("skip")?.addEventListener("click", (e) => {
  e.preventDefault();
  main.focus();
});
window.addEventListener("hashchange", () => {
  markRouted();
  route();
});
setViewState(main, "loading");
route();
