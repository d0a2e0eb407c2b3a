import { html, type SafeHtml } from "../layout.ts";

export interface ChartDay {
  /** YYYY-MM-DD (UTC). */
  date: string;
  opens: number;
  uniqueViewers: number;
}

const WIDTH = 700;
const HEIGHT = 220;
const TOP = 24;
const BOTTOM = 36;
const BAR = 32;

/**
 * An inline SVG bar chart of opens and unique viewers per day (no script, no image request: the CSP allows neither).
 * The numbers are in the chart as text and in its accessible name, so nothing is known only by colour or height.
 * The chart scales with the page; below 40rem its text is drawn larger (layout.ts), so it stays readable at 390 px.
 */
export function statsChart(days: ChartDay[]): SafeHtml {
  const max = Math.max(1, ...days.map((d) => Math.max(d.opens, d.uniqueViewers)));
  const slot = WIDTH / Math.max(1, days.length);
  const plot = HEIGHT - TOP - BOTTOM;
  const height = (n: number) => Math.round((n / max) * plot);
  const label = days.map((d) => `${d.date}: ${d.opens} opens, ${d.uniqueViewers} unique viewers`).join("; ");
  const bars = days.map((d, i) => {
    const x = Math.round(i * slot + slot / 2 - BAR);
    const base = HEIGHT - BOTTOM;
    const o = height(d.opens);
    const v = height(d.uniqueViewers);
    return html`<g><rect x="${x}" y="${base - o}" width="${BAR}" height="${o}" style="fill:var(--accent)"></rect>
<rect x="${x + BAR}" y="${base - v}" width="${BAR}" height="${v}" style="fill:var(--muted)"></rect>
<text x="${x + BAR / 2}" y="${base - o - 6}" text-anchor="middle" style="fill:var(--fg)">${d.opens}</text>
<text x="${x + BAR * 1.5}" y="${base - v - 6}" text-anchor="middle" style="fill:var(--fg)">${d.uniqueViewers}</text>
<text x="${x + BAR}" y="${HEIGHT - 12}" text-anchor="middle" style="fill:var(--muted)">${d.date.slice(5)}</text></g>`;
  });
  return html`<figure class="chart" style="margin:0">
<svg class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="100%" role="img" aria-label="${`Opens and unique viewers per day. ${label}`}" style="max-width:100%;height:auto;font:14px system-ui,sans-serif">
<line x1="0" y1="${HEIGHT - BOTTOM}" x2="${WIDTH}" y2="${HEIGHT - BOTTOM}" style="stroke:var(--border)"></line>${bars}</svg>
<figcaption class="muted"><span style="color:var(--accent)">■</span> opens · <span style="color:var(--muted)">■</span> unique viewers, per day (UTC)</figcaption></figure>`;
}
