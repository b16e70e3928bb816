// The board's charts, drawn with the locally served plotly.js from the same data as the tables beside them.
(function () {
  if (typeof Plotly === "undefined") return;
  const read = (id) => { const el = document.getElementById(id); return el ? JSON.parse(el.textContent) : null; };
  const config = { displayModeBar: false, responsive: true };
  const heat = read("win-heatmap-data");
  if (heat && heat.labels.length > 1) {
    Plotly.newPlot("win-heatmap", [{ type: "heatmap", z: heat.z, x: heat.labels, y: heat.labels, zmin: 0, zmax: 100, colorscale: "RdBu",
      hovertemplate: "%{y} beats %{x} on %{z}% of common tasks<extra></extra>" }],
      { margin: { t: 10, l: 60, r: 10, b: 60 }, height: 360, xaxis: { automargin: true }, yaxis: { autorange: "reversed", automargin: true } }, config);
  }
  const points = read("length-scatter-data");
  if (points && points.length) {
    Plotly.newPlot("length-scatter", [{ type: "scatter", mode: "markers+text", x: points.map((p) => p.x), y: points.map((p) => p.y),
      text: points.map((p) => p.name), textposition: "top center", cliponaxis: false, hovertemplate: "%{text}: %{y:.1f} at %{x:.0f} words<extra></extra>" }],
      { margin: { t: 30, l: 50, r: 40, b: 40 }, height: 320, xaxis: { title: { text: "mean prompt length (words)" }, type: "log", automargin: true },
        yaxis: { title: { text: "ranked score (the board statistics' tasks)" }, automargin: true } }, config);
  }
})();
