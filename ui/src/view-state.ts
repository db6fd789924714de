/** The states `main#view` shows in `data-state` (the tests wait on `loaded`). */
export type ViewState = "loading" | "loaded" | "error";

/**
 * Marks the view loading, loaded or failed, and says so to screen readers
 * through the page's polite live region.
 */
export function setViewState(main: HTMLElement, state: ViewState, message = ""): void {
  main.dataset.state = state;
  main.setAttribute("aria-busy", state === "loading" ? "true" : "false");
  const status = document.getElementById("status");
  if (status) status.textContent = message || (state === "loading" ? "Loading…" : "");
}

/** Shows an error in the view, in an alert region, and marks the view failed. */
export function showError(main: HTMLElement, where: HTMLElement, message: string): void {
  const box = document.createElement("p");
  box.className = "error";
  box.setAttribute("role", "alert");
  box.textContent = message;
  where.replaceChildren(box);
  setViewState(main, "error", message);
}

let routed = false;

/** Called by the router on navigation: views after the first are reached by navigating. */
export function markRouted(): void {
  routed = true;
}

/**
 * Moves focus to a new view's heading so a screen reader announces it, but
 * not on the page's first view: there the keyboard starts at the top (skip
 * link, navigation, token field).
 */
export function focusHeading(heading: HTMLElement): void {
  if (routed) heading.focus();
}
