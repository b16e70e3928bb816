// Charts never hold up a page (issue 42): plotly.js (4.8 MB) and the page's drawing script are fetched only once the
// page has loaded, so neither DOMContentLoaded nor the load event waits for them, and run in that order. A page
// includes this script once per drawing script, naming both files (plotly.js is fetched once however many):
//   <script src="js/charts.js" defer data-plotly-src="vendor/plotly/plotly.min.js" data-chart-src="js/board_charts.js">
(function () {
  const tag = document.currentScript;
  const add = (src) => new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = src;
    script.onload = resolve;
    script.onerror = () => reject(new Error(`could not load ${src}`));
    document.head.appendChild(script);
  });
  function start() {
    window.atelierPlotly = window.atelierPlotly || add(tag.dataset.plotlySrc);
    window.atelierPlotly.then(() => add(tag.dataset.chartSrc));
  }
  if (document.readyState === "complete") setTimeout(start);
  else window.addEventListener("load", () => setTimeout(start));  // after the load event's own handlers
})();
