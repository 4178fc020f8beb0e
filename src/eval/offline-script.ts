/** A scenario's offline script as the scripted model's rules, for evaluations without a real endpoint. */
import type { OfflineRule } from '../config/scenario.js';
import { lastMessage, toolResultCount, type RecordedRequest, type ScriptRule } from '../testing/script.js';

/** An offline script as the scripted model's rules. */
export function scriptRules(rules: readonly OfflineRule[], arm: string): ScriptRule[] {
  return rules.map((rule, i) => ({
    name: `${arm}#${i}`,
    when: (request: RecordedRequest) => matches(rule.when, request),
    reply: rule.reply,
    delayMs: rule.delayMs,
    times: rule.times,
  }));
}

function matches(when: OfflineRule['when'], request: RecordedRequest): boolean {
  const userSays = (text: string) =>
    request.body.messages.some((m) => m.role === 'user' && (m.content ?? '').includes(text));
  return (
    (when.says === undefined || userSays(when.says)) &&
    (when.lastStartsWith === undefined || lastMessage(request).startsWith(when.lastStartsWith)) &&
    (when.toolResults === undefined || toolResultCount(request) === when.toolResults)
  );
}
