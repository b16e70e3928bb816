// "Score by round" chart of an endpoint run's submission page: one line per category, drawn with the locally served plotly.js.
// The same numbers are in the table beside it (#round-scores).
(function () {
  const source = document.getElementById("round-chart-data");
  if (!source || typeof Plotly === "undefined") return;
  const series = JSON.parse(source.textContent);
  const traces = series.map((s) => ({
    type: "scatter", mode: "lines+markers", name: s.category, x: s.x, y: s.y,
    // each round's 95 % interval over tasks, as in the table
    error_y: s.low ? { type: "data", symmetric: false, thickness: 1, array: s.high.map((h, i) => h - s.y[i]), arrayminus: s.low.map((l, i) => s.y[i] - l) } : undefined,
    hovertemplate: s.category + " · round %{x}: %{y:.1f}<extra></extra>",
  }));
  Plotly.newPlot("round-chart", traces, {
    margin: { t: 10, l: 50, r: 10, b: 40 }, height: 280,
    xaxis: { title: { text: "round" }, dtick: 1, automargin: true }, yaxis: { title: { text: "mean feedback score" }, range: [0, 100], automargin: true },
  }, { displayModeBar: false, responsive: true });
})();
