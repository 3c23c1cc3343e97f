// Marks the page as scripted: copy buttons only show where they can work.
document.documentElement.classList.add("js");

// Copy buttons: the text of the element named by data-target goes to the
// clipboard. navigator.clipboard needs a secure context, which a file:// page
// may not be, so a hidden textarea and execCommand are the fallback.
document.addEventListener("click", function (event) {
  var button = event.target.closest("button.copy");
  if (!button) { return; }
  var source = document.getElementById(button.getAttribute("data-target"));
  if (!source) { return; }
  var text = source.textContent;
  var label = button.textContent;
  function done(ok) {
    button.textContent = ok ? "copied" : "press Ctrl+C";
    setTimeout(function () { button.textContent = label; }, 1500);
  }
  function fallback() {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (error) { ok = false; }
    document.body.removeChild(area);
    if (!ok) {
      var range = document.createRange();
      range.selectNodeContents(source);
      var selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
    }
    done(ok);
  }
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(function () { done(true); }, fallback);
  } else {
    fallback();
  }
});
