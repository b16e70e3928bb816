// Category × tag heatmap of the task browser, drawn with the locally served plotly.js.
(function () {
  const data = JSON.parse(document.getElementById("coverage-data").textContent);
  Plotly.newPlot("coverage", [{
    type: "heatmap", x: data.tags, y: data.categories, z: data.z, colorscale: [[0, "#f4f7fb"], [1, "#1f3f7a"]], xgap: 1, ygap: 1,
    hovertemplate: "%{y} · %{x}: %{z} tasks<extra></extra>",
  }], { margin: { t: 10, l: 40, r: 10, b: 40 }, xaxis: { tickangle: -45, automargin: true }, yaxis: { automargin: true } }, { displayModeBar: false, responsive: true });
})();
