/**
 * The mutants `npm run gates:mutations` runs (scripts/gate-mutations.ts): for each delegate gate, one or more ways to
 * break the rule it checks, each a list of edits to the source. A key is a gate's id, or its id and the name of one
 * more way to break it (`G6 tokens`): each key is a mutant of its own.
 */
export type Edit = [file: string, from: string, to: string];

export const MUTATIONS: Record<string, { rule: string; edits: Edit[] }> = {
  G1: {
    rule: 'the master switch is ignored',
    edits: [
      ['src/config/presets.ts', 'const enabled = config.delegation.enabled && (', 'const enabled = true && ('],
      [
        'src/config/tenant-evidence.ts',
        'const activated = config.delegation.enabled && (unconditional || missing.length === 0);',
        'const activated = unconditional || missing.length === 0;',
      ],
      [
        'src/config/tenant-evidence.ts',
        "if (config.delegation.activation === 'unconditional') return config.delegation.enabled;",
        "if (config.delegation.activation === 'unconditional') return true;",
      ],
    ],
  },
  G2: {
    rule: 'the run.delegate scope is not required',
    edits: [
      [
        'src/rules/children.ts',
        'settings.enabled && scopes.includes(DELEGATE_SCOPE) && depth',
        'settings.enabled && depth',
      ],
    ],
  },
  G3: {
    rule: 'a child at max depth may delegate',
    edits: [
      [
        'src/rules/children.ts',
        'scopes.includes(DELEGATE_SCOPE) && depth < depthLimit(settings)',
        'scopes.includes(DELEGATE_SCOPE)',
      ],
      [
        'src/rules/children.ts',
        'input.childDepth < depthLimit(input.settings) && !neverInherited',
        'true && !neverInherited',
      ],
    ],
  },
  G4: {
    rule: 'no cap on briefs per call',
    edits: [
      [
        'src/contract/delegation.ts',
        ".max(3, 'at most 3 briefs per invocation')",
        ".max(30, 'at most 3 briefs per invocation')",
      ],
      ['src/rules/children.ts', 'if (args.briefs.length > settings.maxBriefsPerInvocation) {', 'if (false) {'],
      // The same cap, as the workflow checks it: the JSON Schema generated from the contract, and its compiled check.
      [
        'src/contract/json-schemas.ts',
        '        minItems: 1,\n        maxItems: 3,\n',
        '        minItems: 1,\n        maxItems: 30,\n',
      ],
      ['src/contract/compiled-checks.js', 'data0.length > 3)', 'data0.length > 30)'],
    ],
  },
  G5: {
    rule: 'no cap on children per run',
    edits: [
      [
        'src/rules/children.ts',
        'if (childrenSoFar + args.briefs.length > settings.maxChildrenPerRun) {',
        'if (false) {',
      ],
      ['workflows/delegation/invocation.ts', 'if (run.children.count + plans.length > max) {', 'if (false) {'],
    ],
  },
  G6: {
    rule: "a child's turns are not capped by its parent's",
    edits: [
      [
        'src/rules/budget.ts',
        'const turns = minOf(requested.maxTurns ?? defaults.maxTurns, rem.turns);',
        'const turns = requested.maxTurns ?? defaults.maxTurns ?? null;',
      ],
    ],
  },
  'G6 tokens': {
    rule: "a child's tokens are not capped by what its parent has left",
    edits: [
      [
        'src/rules/budget.ts',
        'const tokens = minOf(requested.maxTokens ?? defaults.maxTokens, free.tokens);',
        'const tokens = requested.maxTokens ?? defaults.maxTokens ?? null;',
      ],
    ],
  },
  'G6 cost': {
    rule: "a child's cost is not capped by what its parent has left",
    edits: [
      [
        'src/rules/budget.ts',
        'const cost = minOf(askedCost === undefined ? undefined : usdToMicro(askedCost), free.costMicroUsd);',
        'const cost = askedCost === undefined ? null : usdToMicro(askedCost);',
      ],
    ],
  },
  G7: {
    rule: "a child's deadline may pass its parent's",
    edits: [
      [
        'src/rules/budget.ts',
        'const deadline = minOf(askedDeadline === undefined ? undefined : Date.parse(askedDeadline), parentLimits.deadlineMs);',
        'const deadline = askedDeadline === undefined ? parentLimits.deadlineMs : Date.parse(askedDeadline);',
      ],
    ],
  },
  G8: {
    rule: 'a reservation that does not fit is taken anyway',
    edits: [
      [
        'src/rules/budget.ts',
        '  if (problems.length > 0) {\n    return {\n      ok: false,',
        '  if (problems.length < 0) {\n    return {\n      ok: false,',
      ],
    ],
  },
  G9: {
    rule: "a child's spend is never debited",
    edits: [['workflows/run/account.ts', '    this.debit(settled.charge);\n', '\n']],
  },
  'G9 reserve': {
    rule: 'no reservation is held while a child runs',
    edits: [
      ['workflows/run/account.ts', '    if (result.ok) this.#reserved = result.budget.reserved;', '    void result;'],
    ],
  },
  'G8 reserve': {
    rule: 'briefs that fit start without their reservation held',
    edits: [
      ['workflows/run/account.ts', '    if (result.ok) this.#reserved = result.budget.reserved;', '    void result;'],
    ],
  },
  G10: {
    rule: 'the synthesis call offers tools',
    edits: [
      [
        'src/rules/agent-loop.ts',
        'offerTools: synthesisFor === null && rem.toolCalls !== 0',
        'offerTools: rem.toolCalls !== 0',
      ],
    ],
  },
  G11: {
    rule: "a brief's allowed_tools is ignored",
    edits: [
      [
        'src/rules/children.ts',
        '(input.allowedTools ?? parentNames).includes(tool.name) &&',
        'parentNames.includes(tool.name) &&',
      ],
    ],
  },
  G12: {
    rule: 'neverInherit is ignored',
    edits: [
      [
        'src/rules/children.ts',
        'return NEVER_INHERITED.includes(tool) || settings.neverInherit.includes(tool);',
        'return false;',
      ],
    ],
  },
  G13: {
    rule: 'child output is not escaped inside the untrusted wrapper',
    edits: [['src/rules/children.ts', "const json = lines.replace(/</g, '\\\\u003c');", 'const json = lines;']],
  },
  G14: {
    rule: 'a cancelled parent abandons its children',
    edits: [
      [
        'workflows/delegation/life.ts',
        'parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,',
        'parentClosePolicy: ParentClosePolicy.ABANDON,',
      ],
      [
        'workflows/delegation/life.ts',
        'cancellationType: ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,',
        'cancellationType: ChildWorkflowCancellationType.ABANDON,',
      ],
    ],
  },
  G15: {
    rule: "a failed child's failure reaches the parent as an exception",
    edits: [
      [
        'workflows/delegation/spawn.ts',
        'return { ...failedEnd(cause.message, reportedUsage(details)), ...reportedArtifacts(details) };',
        'throw err;',
      ],
      [
        'workflows/delegation/life.ts',
        "    return this.#settle(because('failed', `this brief's delegation failed: ${failureMessage(err)}`));",
        '    throw err;',
      ],
      [
        'workflows/tool-turn.ts',
        '(err) => ({ content: `"${call.name}" failed: ${failureMessage(err)}; nothing more was done`, isError: true }),',
        '(err) => {\n        throw err;\n      },',
      ],
    ],
  },
  G16: {
    rule: 'a taken id is attached to whoever holds it',
    edits: [
      [
        'workflows/delegation/spawn.ts',
        '    existing?.parentId === workflowInfo().workflowId &&',
        '    true ||\n    existing?.parentId === workflowInfo().workflowId &&',
      ],
    ],
  },
  G17: {
    rule: 'a limit_reached child is never joined',
    edits: [
      [
        'workflows/delegation/life.ts',
        '    return this.#ended(endOfResult(result, returnShape));',
        "    if (result.status === 'limit_reached') await new Promise<never>(() => undefined);\n    return this.#ended(endOfResult(result, returnShape));",
      ],
    ],
  },
  G18: {
    rule: 'a join adds a turn of its own',
    edits: [
      [
        'workflows/loop.ts',
        '        await toolTurn(run, step.calls, step.refused);\n',
        "        await toolTurn(run, step.calls, step.refused);\n        if (run.children.count > 0) run.inbox.receive({ type: 'user', content: 'joined' });\n",
      ],
    ],
  },
  G19: {
    rule: 'the ledger row loses its invocation id',
    edits: [['workflows/delegation/invocation.ts', '      invocationId: this.call.id,\n', '\n']],
  },
  G20: {
    rule: 'a child is not listed under its parent',
    edits: [
      [
        'src/contract/search-attributes.ts',
        '...(child ? [{ key: DEPUTY_PARENT_ID, value: child.parentId }] : []),',
        '...(child ? [] : []),',
      ],
    ],
  },
  G21: {
    rule: "the tenant's cap is not enforced",
    edits: [['workflows/tenant-admission.ts', '      if (holders.size >= cap) break;\n', '\n']],
  },
  G22: {
    rule: "a child's request is placed as its parent's own",
    edits: [
      ['workflows/approval-book.ts', 'path: r.path ? `${taskName}/${r.path}` : taskName', 'path: r.path'],
      ['workflows/approval-book.ts', '      if (below)\n', '      if (below && !below)\n'],
    ],
  },
  G23: {
    rule: "a parent takes up its child's request as a request of its own",
    edits: [
      [
        'workflows/approvals.ts',
        '    for (const request of run.approvals.receive(from, taskName, body)) {\n',
        "    for (const request of run.approvals.receive(from, taskName, body)) {\n      run.approvals.open({ ...request, run: run.workflowId, path: '' });\n",
      ],
    ],
  },
  G24: {
    rule: 'the approval threshold of a delegation is not applied',
    edits: [
      [
        'src/rules/approvals.ts',
        'if (above === undefined || together <= above) return undefined;',
        'return undefined;',
      ],
    ],
  },
};
