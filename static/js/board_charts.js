// The board's charts, drawn with the locally served plotly.js from the same data as the tables beside them.
// Entry names are long ("1. prompter · team"): they are wrapped to the room each chart has (redrawn when the window
// changes), and the heatmap keys its columns by letter when the names would not fit across them, so no label is cut.
(function () {
  if (typeof Plotly === "undefined") return;
  const read = (id) => { const el = document.getElementById(id); return el ? JSON.parse(el.textContent) : null; };
  const config = { displayModeBar: false, responsive: true };
  const CHAR = 7.5, LINE = 15;  // px a character and a line of plotly's 12 px labels take, rounded up
  const NAMED = 15;  // the scatter names its points beside them up to this many; more are named on hover only

  // Plotly reads labels as its small HTML: a name is escaped, then broken into lines of at most `chars` characters.
  const escape = (s) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  function wrap(name, chars) {
    const lines = [];
    let line = "";
    for (const word of name.split(" ")) {
      for (let rest = word; rest;) {
        if (rest.length <= (line ? chars - line.length - 1 : chars)) { line = line ? `${line} ${rest}` : rest; rest = ""; }
        else if (line) { lines.push(line); line = ""; }
        else { lines.push(rest.slice(0, chars)); rest = rest.slice(chars); }  // a word longer than a line is cut
      }
    }
    if (line || !lines.length) lines.push(line);
    return lines.map(escape);
  }
  const tallest = (wrapped) => Math.max(...wrapped.map((lines) => lines.length));
  const letter = (i) => (i >= 26 ? String.fromCharCode(64 + Math.floor(i / 26)) : "") + String.fromCharCode(65 + (i % 26));

  function heatmap(heat) {
    const el = document.getElementById("win-heatmap"), width = el.clientWidth || 600, n = heat.labels.length;
    const chars = (share) => Math.max(10, Math.floor((width * share) / CHAR));  // row names: that share of the width
    const across = Math.floor((width - chars(0.3) * CHAR - 100) / n / CHAR) - 1;  // less the colour bar and margins
    const keyed = across < 12;  // columns too narrow for names: a letter each, and the row names start with it
    const rows = heat.labels.map((l, i) => (keyed ? wrap(`${letter(i)}: ${l}`, chars(0.4)) : wrap(l, chars(0.3))));
    const columns = heat.labels.map((l, i) => (keyed ? [letter(i)] : wrap(l, across)));
    const rowHeight = Math.max(40, tallest(rows) * LINE + 10);
    const names = heat.labels.map(escape);
    Plotly.react(el, [{ type: "heatmap", z: heat.z, x: heat.labels, y: heat.labels, zmin: 0, zmax: 100, colorscale: "RdBu",
      customdata: heat.z.map((row, i) => row.map((_, j) => [names[i], names[j]])), colorbar: { thickness: 14 },
      hovertemplate: "%{customdata[0]} beats %{customdata[1]} on %{z}% of common tasks<extra></extra>" }],
    { margin: { t: 10, l: 10, r: 10, b: 10 }, height: n * rowHeight + tallest(columns) * LINE + 40,
      xaxis: { automargin: true, tickangle: 0, tickmode: "array", tickvals: heat.labels, ticktext: columns.map((c) => c.join("<br>")) },
      yaxis: { autorange: "reversed", automargin: true, tickmode: "array", tickvals: heat.labels, ticktext: rows.map((r) => r.join("<br>")) } },
    config);
  }

  function scatter(points) {
    const el = document.getElementById("length-scatter"), width = el.clientWidth || 600;
    const named = points.length <= NAMED, chars = Math.max(10, Math.floor((width * 0.4) / CHAR));
    // A name is written towards the middle of the plot from its point, so it stays inside the chart.
    const xs = points.map((p) => Math.log10(Math.max(p.x, 1))), ys = points.map((p) => p.y);
    const middle = (v) => (Math.min(...v) + Math.max(...v)) / 2, mx = middle(xs), my = middle(ys);
    const where = points.map((_, i) => `${ys[i] > my ? "bottom" : "top"} ${xs[i] > mx ? "left" : "right"}`);
    Plotly.react(el, [{ type: "scatter", mode: named ? "markers+text" : "markers", x: points.map((p) => p.x), y: ys,
      text: points.map((p) => wrap(p.name, chars).join("<br>")), textposition: where, cliponaxis: false,
      customdata: points.map((p) => escape(p.name)), hovertemplate: "%{customdata}: %{y:.1f} at %{x:.0f} words<extra></extra>" }],
    { margin: { t: 20, l: 10, r: 20, b: 10 }, height: 340,
      xaxis: { title: { text: "mean prompt length (words)", font: { size: 12 } }, type: "log", automargin: true },
      yaxis: { title: { text: "ranked score (the board statistics' tasks)", font: { size: 12 } }, automargin: true } }, config);
  }

  const heat = read("win-heatmap-data"), points = read("length-scatter-data");
  function draw() {
    if (heat && heat.labels.length > 1) heatmap(heat);
    if (points && points.length) scatter(points);
  }
  draw();
  let pending;
  window.addEventListener("resize", () => { clearTimeout(pending); pending = setTimeout(draw, 200); });
})();
