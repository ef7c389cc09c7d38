// MathJax reads the maths pymdownx.arithmatex marks (class "arithmatex"). The MathJax
// script itself is copied into the site from the installed django-static-mathjax
// package by docs/hooks.py: nothing is fetched, so the pages render from file:// too.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
  },
};
