/** The web view's first page: open a run by its id, or one of the latest roots. */
import type { SessionInfo } from '../client/listings.js';
import { elide } from '../client/tree.js';
import { escapeHtml } from './page.js';
import type { DeputyClient } from '../client/client.js';
import { withinSeconds } from '../client/recorded.js';
import { unreachable } from './lookups.js';

const STYLE = `body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d232a; background: #f6f7f9; }
header { padding: 12px 20px; background: #1d232a; color: #fff; } header h1 { font-size: 16px; margin: 0; }
main { max-width: 960px; margin: 24px auto; padding: 0 20px; }
section { background: #fff; border: 1px solid #dde1e6; border-radius: 6px; padding: 16px; margin-bottom: 16px; }
h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .04em; color: #57606a; margin: 0 0 10px; }
form { display: flex; gap: 8px; } input { flex: 1; font: inherit; padding: 6px 8px; border: 1px solid #c9d1d9; border-radius: 4px; }
button { font: inherit; padding: 6px 14px; border: 0; border-radius: 4px; background: #0969da; color: #fff; cursor: pointer; }
table { border-collapse: collapse; width: 100%; } td, th { padding: 5px 6px; text-align: left; border-bottom: 1px solid #eef0f2; }
th { font-size: 12px; color: #57606a; } a { color: #0969da; } .muted { color: #57606a; }
.status-completed { color: #1a7f37; } .status-failed, .status-cancelled, .status-terminated { color: #cf222e; }
.status-running { color: #0969da; } .error { color: #cf222e; }`;

/** The page: a form for a run id, and the latest roots (or, within seconds, why they could not be listed). */
export async function indexPage(deputy: DeputyClient): Promise<string> {
  const recent = await withinSeconds(deputy.temporal, 3, async () =>
    (await deputy.listSessions(undefined, 60)).filter((s) => s.parentId === null).slice(0, 20),
  ).catch(unreachable);
  return html(recent);
}

function html(recent: SessionInfo[] | Error): string {
  const rows = Array.isArray(recent)
    ? recent.length === 0
      ? '<p class="muted">no runs in this namespace yet: start one (npm run demo, or deputy run "…")</p>'
      : `<table><thead><tr><th>run</th><th>status</th><th>started</th></tr></thead><tbody>${recent
          .map(
            (s) =>
              `<tr><td><a href="/runs/${encodeURIComponent(s.sessionId)}" title="${escapeHtml(s.sessionId)}">${escapeHtml(elide(s.sessionId, 48))}</a></td><td class="status-${escapeHtml(s.status)}">${escapeHtml(s.status)}</td><td class="muted">${escapeHtml(s.startTime.slice(0, 19).replace('T', ' '))}</td></tr>`,
          )
          .join('')}</tbody></table>`
    : `<p class="error">${escapeHtml(recent.message)}</p>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Deputy</title><style>${STYLE}</style></head>
<body><header><h1>Deputy</h1></header><main>
<section><h2>Open a run</h2>
<form onsubmit="location='/runs/'+encodeURIComponent(this.id.value.trim());return false">
<input name="id" placeholder="workflow id, e.g. demo-2026-12-07T20-00-00-000Z" aria-label="run id" autofocus><button>Watch</button></form></section>
<section><h2>Latest runs</h2>${rows}</section>
</main></body></html>`;
}
