// The state-of-the-art page's charts, drawn with the locally served plotly.js from the same data as the table below them
// (#sota-data, the release's sota.json): per series, the best score by date as a step line, each step a marker with the
// board's 95 % interval, held until the latest scored entry; the human baseline rows as dashed reference lines.
(function () {
  const source = document.getElementById("sota-data");
  if (!source || typeof Plotly === "undefined") return;
  const data = JSON.parse(source.textContent);
  const config = { displayModeBar: false, responsive: true };
  const COLOURS = { overall: "#2b2d42", OE: "#1f77b4", CO: "#2ca02c", IM: "#d62728" };
  const HUMANS = ["#b5179e", "#7209b7", "#f48c06", "#6c757d", "#adb5bd", "#495057"];
  // Plotly reads names as its small HTML: entry and team names are escaped before they go in.
  const escape = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const day = (iso) => iso.slice(0, 19).replace("T", " ");  // UTC, as the table gives it
  const fixed = (v) => (v === null || v === undefined ? "—" : v.toFixed(1));
  // The x range with room on both sides, so a step's marker and interval at either end are drawn whole.
  function span(first, until) {
    const start = Date.parse(`${first.replace(" ", "T")}Z`), end = Date.parse(`${until.replace(" ", "T")}Z`);
    const pad = Math.max(12 * 3600 * 1000, (end - start) * 0.05);
    return [start - pad, end + pad].map((ms) => day(new Date(ms).toISOString()));
  }

  function draw(series) {
    const el = document.getElementById(`sota-chart-${series.key}`);
    if (!el) return;
    const steps = series.steps, colour = COLOURS[series.key] || "#2b2d42";
    const first = steps.length ? day(steps[0].date) : null, until = series.until ? day(series.until) : first;
    const traces = [];
    if (steps.length) {
      traces.push({ type: "scatter", mode: "lines", line: { shape: "hv", color: colour, width: 2 }, name: "best so far",
        x: [...steps.map((s) => day(s.date)), until], y: [...steps.map((s) => s.value), steps[steps.length - 1].value],
        hoverinfo: "skip", showlegend: false });
      traces.push({ type: "scatter", mode: "markers", marker: { color: colour, size: 8 }, name: "step (entry that set it)",
        x: steps.map((s) => day(s.date)), y: steps.map((s) => s.value),
        error_y: { type: "data", symmetric: false, color: colour, thickness: 1,
          array: steps.map((s) => (s.ci_high === null ? 0 : s.ci_high - s.value)),
          arrayminus: steps.map((s) => (s.ci_low === null ? 0 : s.value - s.ci_low)) },
        customdata: steps.map((s) => [escape(s.prompter), escape(s.team), s.entry, fixed(s.ci_low), fixed(s.ci_high)]),
        hovertemplate: "%{customdata[0]} · %{customdata[1]} (#%{customdata[2]})<br>%{y:.1f} [%{customdata[3]}, %{customdata[4]}] on %{x|%Y-%m-%d}<extra></extra>" });
    }
    // Reference lines span the whole x range (one instant alone would draw a line of no length).
    const range = first === null ? null : span(first, until);
    const noise = series.within_noise || [];
    if (noise.length) {
      traces.push({ type: "scatter", mode: "markers", marker: { color: colour, size: 7, symbol: "circle-open" }, name: "higher, within noise (no step)",
        x: noise.map((s) => day(s.date)), y: noise.map((s) => s.value),
        customdata: noise.map((s) => [escape(s.prompter), s.entry, escape(s.holder_prompter)]),
        hovertemplate: "%{customdata[0]} (#%{customdata[1]}): %{y:.1f}, within noise of %{customdata[2]}<extra></extra>" });
    }
    series.humans.forEach((h, i) => {
      const x = range === null ? [] : range;
      traces.push({ type: "scatter", mode: "lines", name: `${escape(h.label)}: ${fixed(h.value)}`, x, y: x.map(() => h.value),
        line: { dash: "dash", width: 1.5, color: HUMANS[i % HUMANS.length] },
        hovertemplate: `${escape(h.label)} (reference): ${fixed(h.value)} [${fixed(h.ci_low)}, ${fixed(h.ci_high)}]<extra></extra>` });
    });
    const layout = {
      title: { text: `${escape(series.name)} · ${series.steps.length} step${series.steps.length === 1 ? "" : "s"}`, font: { size: 14 }, x: 0.02 },
      margin: { t: 40, l: 10, r: 10, b: 10 }, height: 320, showlegend: traces.length > 1,
      legend: { orientation: "h", x: 0, y: -0.2, yanchor: "top", font: { size: 11 } },
      // within a few days, ticks name the hour too: a day alone repeats on every tick (a demo publishes at one instant)
      xaxis: { type: "date", automargin: true, tickformat: range && Date.parse(`${range[1].replace(" ", "T")}Z`) - Date.parse(`${range[0].replace(" ", "T")}Z`) < 3 * 86400000 ? "%m-%d %H:%M" : "%Y-%m-%d",
        ...(first === null ? {} : { range }) },
      yaxis: { title: { text: "score (0–100)", font: { size: 12 } }, automargin: true },
    };
    if (!steps.length) {
      layout.annotations = [{ text: "no entry has a score here yet", showarrow: false, xref: "paper", yref: "paper", x: 0.5, y: 0.5 }];
      layout.showlegend = false;  // nothing is drawn without a date: a legend would name lines that are not there
    }
    Plotly.react(el, traces, layout, config);
  }

  data.series.forEach(draw);
})();
