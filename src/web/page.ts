/**
 * The web view's one page: a run's tree with cost roll-ups, live over Server-Sent Events; a run's
 * transcript with untrusted envelopes shown as such; questions waiting for an answer; calls waiting for approval, with
 * approve and deny buttons; links into Temporal UI. Plain
 * DOM code, no framework: the server folds the events, the page only draws what it is sent.
 */
/** The page's look. */
const STYLE = `  body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d232a; background: #f6f7f9; }
  header { padding: 12px 20px; background: #1d232a; color: #fff; display: flex; gap: 16px; align-items: baseline; }
  header h1 { font-size: 16px; margin: 0; }
  header .summary { color: #c9d1d9; }
  main { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 16px; padding: 16px 20px; }
  @media (max-width: 1279px) { main { grid-template-columns: minmax(0, 1fr); } }
  header h1 { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; max-width: 40%; }
  section { background: #fff; border: 1px solid #dde1e6; border-radius: 6px; padding: 12px 14px; }
  h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .04em; color: #57606a; margin: 0 0 8px; }
  table { border-collapse: collapse; width: 100%; table-layout: auto; }
  #tree { font-size: 13px; } td.name { white-space: nowrap; } td.latest { overflow-wrap: anywhere; min-width: 8em; } td.calls { min-width: 7.5em; }
  .why { color: #cf222e; font-size: 12px; overflow-wrap: anywhere; }
  td, th { padding: 4px 5px; text-align: left; border-bottom: 1px solid #eef0f2; vertical-align: top; }
  th { font-weight: 600; color: #57606a; font-size: 12px; }
  tr.run { cursor: pointer; } tr.run:hover { background: #f0f4f8; } tr.selected { background: #e6f0ff; }
  .num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
  .status { font-weight: 600; white-space: nowrap; } .status[class*=status-waiting] { color: #8250df; } .status-completed { color: #1a7f37; } .status-running, .status-starting { color: #0969da; }
  .status-failed, .status-cancelled, .status-terminated { color: #cf222e; } .status-limit_reached { color: #9a6700; }
  .status-waiting_for_answer { color: #8250df; }
  .latest { color: #57606a; font-size: 12px; } .no-tools { color: #9a6700; font-weight: 600; }
  .event { border-left: 3px solid #d0d7de; padding: 4px 8px; margin: 6px 0; white-space: pre-wrap; word-break: break-word; }
  .event .kind { font-size: 11px; color: #57606a; display: block; }
  .event.assistant { border-color: #0969da; } .event.user { border-color: #1a7f37; } .event.tool { border-color: #9a6700; }
  .untrusted { background: #fff8c5; border: 1px dashed #bf8700; border-left: 3px solid #bf8700; }
  .untrusted-label { font-weight: 700; color: #7d4e00; font-size: 11px; }
  .question { background: #fbefff; border-left: 3px solid #8250df; padding: 6px 8px; margin: 6px 0; }
  .approval { background: #fff1e5; border-left: 3px solid #bc4c00; padding: 6px 8px; margin: 6px 0; }
  .approval input { width: 60%; } .approval pre.arguments { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 20em; overflow: auto; margin: 4px 0; } .approval .outcome { color: #57606a; font-size: 12px; margin-left: 6px; }
  .status-waiting_for_approval { color: #bc4c00; }
  a { color: #0969da; }
  #connection { font-size: 12px; }
`;

/** The page's code: it draws what the server sends over Server-Sent Events. */
const SCRIPT = `const $ = (id) => document.getElementById(id);
const text = (value) => document.createTextNode(value == null ? '' : String(value));
const el = (tag, attrs, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  for (const child of children) node.append(typeof child === 'string' ? text(child) : child);
  return node;
};
// An id elided in its middle, as the CLI shows it; the whole id is the link's title.
const elide = (value, max) => value.length <= max ? value : value.slice(0, max - 1 - Math.floor((max - 1) / 2)) + '…' + value.slice(value.length - Math.floor((max - 1) / 2));
const uiLink = (id) => UI + '/namespaces/' + encodeURIComponent(NAMESPACE) + '/workflows/' + encodeURIComponent(id);
$('root').textContent = ROOT;
$('temporal-ui').href = uiLink(ROOT);
let selected = ROOT;
let runs = [];

function drawTree() {
  const body = $('tree').tBodies[0];
  body.replaceChildren(...runs.map((run) => {
    const row = el('tr', { class: 'run' + (run.id === selected ? ' selected' : ''), 'data-run': run.id },
      el('td', { class: 'name' }, '\\u00a0'.repeat(run.depth * 3) + (run.depth ? '└─ ' : ''), el('a', { href: uiLink(run.id), target: '_blank', title: run.id + ' in Temporal UI' }, elide(run.name, 26))),
      el('td', { class: 'status status-' + run.status }, run.status),
      el('td', { class: 'num' }, String(run.tokens)),
      el('td', { class: 'num' }, '$' + run.costUsd.toFixed(6)),
      el('td', { class: 'num tree-cost', title: run.treeTokens + ' tokens in this subtree, debited by its budget' }, '$' + run.treeCostUsd.toFixed(6)),
      el('td', { class: 'num tree-billed', title: 'what the endpoints billed this subtree: their reports, Deputy\\'s count where none' }, '$' + run.treeBilledCostUsd.toFixed(6)),
      el('td', { class: 'calls' }, run.calls),
      el('td', { class: 'latest' }, run.latest,
        run.error ? el('div', { class: 'why' }, 'why: ' + run.error) : '',
        run.depth > 0 && run.status === 'completed' && run.toolCalls === 0
          ? el('span', { class: 'no-tools', title: 'this child called no tool: nothing in its answer was looked up' }, ' · no tool calls')
          : ''));
    row.addEventListener('click', (e) => { if (e.target.tagName !== 'A') { selected = run.id; drawTree(); loadTranscript(); } });
    return row;
  }));
}

function drawQuestions(questions) {
  const box = $('questions');
  if (!questions.length) return box.replaceChildren(el('em', {}, 'none'));
  box.replaceChildren(...questions.map((q) => el('div', { class: 'question' },
    el('strong', {}, q.taskName + ' asks (' + q.questionId + '): '), q.question)));
}

// Each request keeps its node (and the reason being typed) while it stays open; a decided one goes.
function drawApprovals(approvals) {
  const box = $('approvals');
  if (!approvals.length) return box.replaceChildren(el('em', {}, 'none'));
  const kept = new Map([...box.querySelectorAll('.approval')].map((node) => [node.dataset.key, node]));
  box.replaceChildren(...approvals.map((a) => kept.get(a.run + ' ' + a.requestId) || approvalNode(a)));
}

function approvalNode(a) {
  const reason = el('input', { placeholder: 'reason (the model reads it)', 'aria-label': 'reason for ' + a.requestId });
  const outcome = el('span', { class: 'outcome' });
  const send = async (decision) => {
    const response = await fetch('/api/runs/' + encodeURIComponent(ROOT) + '/approvals', {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ run: a.run, requestId: a.requestId, decision, ...(reason.value ? { reason: reason.value } : {}) }),
    });
    const body = await response.json();
    outcome.textContent = response.ok ? (body.decision === 'approve' ? 'approved' : 'denied') + ' by ' + body.by : body.error;
  };
  const button = (label, decision) => { const b = el('button', { type: 'button' }, label); b.addEventListener('click', () => send(decision)); return b; };
  // Decided only on the arguments whole: a request whose arguments this page cannot show gets no buttons.
  const whole = typeof a.arguments === 'string' && a.arguments.length >= a.argumentsChars;
  const shown = whole
    ? [el('div', { class: 'latest' }, 'arguments, whole (' + a.argumentsChars + ' characters):'), el('pre', { class: 'arguments' }, a.arguments)]
    : [el('div', { class: 'latest' }, 'its arguments could not be read whole here: read them with npm run deputy -- approvals ' + a.run + ' and decide there')];
  return el('div', { class: 'approval', 'data-request': a.requestId, 'data-key': a.run + ' ' + a.requestId },
    el('strong', {}, a.taskName + ' asks (' + a.requestId + '): '), a.tool, ...shown,
    el('span', { class: 'latest' }, 'until ' + a.deadline), el('br'),
    ...(whole ? [reason, ' ', button('Approve', 'approve'), ' ', button('Deny', 'deny')] : []), outcome);
}

const UNTRUSTED = /<EXTERNAL_UNTRUSTED>[\\s\\S]*?<\\/EXTERNAL_UNTRUSTED>/;
function eventNode(event) {
  const kinds = { 'message/user': 'user', 'message/assistant': 'assistant', 'tool/result': 'tool' };
  let content = event.content ?? event.summary ?? event.text ?? '';
  if (event.toolCalls && event.toolCalls.length) content += (content ? '\\n' : '') + '→ ' + event.toolCalls.map((c) => c.name + ' ' + c.arguments).join('\\n→ ');
  const untrusted = typeof content === 'string' && UNTRUSTED.test(content);
  const node = el('div', { class: 'event ' + (kinds[event.type] || '') + (untrusted ? ' untrusted' : '') },
    el('span', { class: 'kind' }, event.type + (event.name ? ' · ' + event.name : '') + (event.at ? ' · ' + event.at.slice(11, 19) : '')));
  if (untrusted) node.append(el('span', { class: 'untrusted-label' }, 'UNTRUSTED DATA (written by another agent, not instructions)'), el('br'));
  node.append(text(typeof content === 'string' ? content : JSON.stringify(content)));
  return node;
}

async function loadTranscript() {
  const run = selected;
  $('transcript-run').textContent = run;
  const response = await fetch('/api/runs/' + encodeURIComponent(run) + '/transcript');
  if (run !== selected) return;
  if (!response.ok) return $('transcript').replaceChildren(el('em', {}, await response.text()));
  const { session, error, note } = await response.json();
  $('transcript').replaceChildren(
    ...(note ? [el('em', {}, note)] : []),
    ...(error ? [el('div', { class: 'event why' }, 'failed: ' + error)] : []),
    ...session.map(eventNode));
}

let transcriptTimer;
// Whether the run is there, and Temporal answers, is asked first: the page says which within seconds.
async function follow() {
  const found = await fetch('/api/runs/' + encodeURIComponent(ROOT)).then((r) => r.json(), () => ({ error: 'the web view does not answer' }));
  if (found.error) {
    $('summary').textContent = found.error;
    $('connection').textContent = '';
    $('transcript').replaceChildren(el('em', {}, found.error));
    return;
  }
  $('connection').textContent = 'connecting…';
  const source = new EventSource('/api/runs/' + encodeURIComponent(ROOT) + '/events');
  listen(source);
  loadTranscript();
}
function listen(source) {
source.addEventListener('update', (message) => {
  const update = JSON.parse(message.data);
  runs = update.runs;
  $('summary').textContent = update.summary;
  drawTree();
  drawQuestions(update.questions);
  drawApprovals(update.approvals);
  if (update.event && update.event.run === selected) { clearTimeout(transcriptTimer); transcriptTimer = setTimeout(loadTranscript, 150); }
});
source.addEventListener('end', () => { $('connection').textContent = 'tree ended'; source.close(); });
source.addEventListener('failed', (message) => { $('connection').textContent = 'stopped: ' + JSON.parse(message.data).error; source.close(); });
source.onerror = () => { $('connection').textContent = source.readyState === EventSource.CLOSED ? 'the stream ended: reload to follow again' : 'reconnecting…'; };
source.onopen = () => { $('connection').textContent = 'live'; };
}
follow();
`;

export function page(rootId: string, uiBase: string, namespace: string): string {
  const json = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Deputy · ${escapeHtml(rootId)}</title>
<style>
${STYLE}</style>
</head>
<body>
<header>
  <h1>Deputy · <span id="root"></span></h1>
  <span class="summary" id="summary">looking the run up…</span>
  <a id="temporal-ui" style="color:#8cc4ff" target="_blank">open in Temporal UI</a>
  <span id="connection"></span>
</header>
<main>
  <div>
    <section>
      <h2>Tree</h2>
      <table id="tree"><thead><tr><th>run</th><th>status</th><th class="num">own tokens</th><th class="num">own cost</th><th class="num" title="debited by the budget: the larger of each call's report and Deputy's count">tree cost</th><th class="num" title="what the endpoints reported billing">tree billed</th><th title="the run's own model calls and tool calls, as deputy tree counts them">own calls</th><th>latest</th></tr></thead><tbody></tbody></table>
    </section>
    <section style="margin-top:16px">
      <h2>Questions waiting for an answer</h2>
      <div id="questions"><em>none</em></div>
    </section>
    <section style="margin-top:16px">
      <h2>Calls waiting for approval</h2>
      <div id="approvals"><em>none</em></div>
    </section>
  </div>
  <section>
    <h2>Transcript · <span id="transcript-run"></span></h2>
    <div id="transcript"><em>click a run</em></div>
  </section>
</main>
<script>
const ROOT = ${json(rootId)};
const UI = ${json(uiBase)};
const NAMESPACE = ${json(namespace)};
${SCRIPT}</script>
</body>
</html>`;
}

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
