// The prompter page's charts: one per board (pack version and revision: scores on other tasks never share an axis),
// overall and per-category scores of each published entry there, with the board's 95 % intervals as error bars,
// drawn with the locally served plotly.js. The same numbers are in the table beneath (#prompter-entries).
(function () {
  const source = document.getElementById("prompter-chart-data");
  if (!source || typeof Plotly === "undefined") return;
  const chart = JSON.parse(source.textContent);
  chart.groups.forEach((group, i) => {
    const traces = group.series.map((s) => ({
      type: "scatter", mode: "markers", name: s.name, x: s.x, y: s.y,  // points: entries are not a line
      error_y: {
        type: "data", symmetric: false,
        array: s.high.map((h, j) => (h === null ? 0 : h - s.y[j])),
        arrayminus: s.low.map((l, j) => (l === null ? 0 : s.y[j] - l)),
        thickness: 1,
      },
      hovertemplate: group.board + " · " + s.name + " · %{x}: %{y:.1f}<extra></extra>",
    }));
    Plotly.newPlot("prompter-chart-" + i, traces, {
      margin: { t: 10, l: 50, r: 10, b: 40 }, height: 300, legend: { orientation: "h" },
      xaxis: { automargin: true, type: "category" }, yaxis: { title: { text: "score (0–100)" }, range: [0, 100], automargin: true },
    }, { displayModeBar: false, responsive: true });
  });
})();
