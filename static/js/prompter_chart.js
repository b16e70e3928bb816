// The prompter page's chart: overall and per-category scores of each published entry, with the board's 95 % intervals
// as error bars, drawn with the locally served plotly.js. The same numbers are in the table beneath (#prompter-entries).
(function () {
  const source = document.getElementById("prompter-chart-data");
  if (!source || typeof Plotly === "undefined") return;
  const chart = JSON.parse(source.textContent);
  const traces = chart.series.map((s) => ({
    type: "scatter", mode: "markers", name: s.name, x: s.x, y: s.y,  // points: entries on different boards are not a line
    error_y: {
      type: "data", symmetric: false,
      array: s.high.map((h, i) => (h === null ? 0 : h - s.y[i])),
      arrayminus: s.low.map((l, i) => (l === null ? 0 : s.y[i] - l)),
      thickness: 1,
    },
    hovertemplate: s.name + " · %{x}: %{y:.1f}<extra></extra>",
  }));
  Plotly.newPlot("prompter-chart", traces, {
    margin: { t: 10, l: 50, r: 10, b: 40 }, height: 320, legend: { orientation: "h" },
    xaxis: { automargin: true, type: "category" }, yaxis: { title: { text: "score (0–100)" }, range: [0, 100], automargin: true },
  }, { displayModeBar: false, responsive: true });
})();
