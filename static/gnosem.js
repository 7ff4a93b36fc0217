// Copy buttons: <button class="copy" data-copy-from="ELEMENT_ID"> copies that element's text.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-copy-from]");
  if (!button) return;
  const source = document.getElementById(button.dataset.copyFrom);
  try {
    await navigator.clipboard.writeText(source.textContent.trim());
    button.textContent = "Copied";
  } catch (error) {
    // No clipboard access (plain http on another host): select the text for Ctrl-C instead.
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    button.textContent = "Press Ctrl-C";
  }
  setTimeout(() => { button.textContent = "Copy"; }, 2000);
});
