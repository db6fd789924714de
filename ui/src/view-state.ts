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
