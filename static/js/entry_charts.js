// The entry page's per-tag chart, drawn with the locally served plotly.js from the table beside it (#tag-table).
(function () {
  const source = document.getElementById("tag-chart-data");
  if (!source || typeof Plotly === "undefined") return;
  const data = JSON.parse(source.textContent);
  Plotly.newPlot("tag-chart", [{ type: "bar", x: data.x, y: data.y, customdata: data.n,
    hovertemplate: "%{x}: %{y:.1f} over %{customdata} task(s)<extra></extra>" }],
    { margin: { t: 10, l: 50, r: 10, b: 40 }, height: 320, xaxis: { automargin: true }, yaxis: { title: { text: "mean task score" }, range: [0, 100], automargin: true } },
    { displayModeBar: false, responsive: true });
})();
