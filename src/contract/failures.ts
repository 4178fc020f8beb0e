/**
 * Every failure type Deputy throws on purpose, in one catalogue (the `type` of an `ApplicationFailure`, dotted:
 * `Area.Problem`). Callers match on these strings; they are part of the contract.
 */
export const FAILURE = {
  /** A run's input failed its schema, or claims an origin Temporal does not record. Non-retryable. */
  RunInputInvalid: 'RunInput.Invalid',
  /** An activity of Deputy's called from outside Deputy's workflows (a standalone activity, another type). */
  ActivityCaller: 'Activity.NotDeputysCaller',
  /** A child run failed; its details carry its `RunResult` so the parent can read its spend. */
  ChildFailed: 'AgentRun.Failed',
  /** The next model-call input is past `payloads.maxInputBytes` even after compaction. Non-retryable. */
  PayloadTooLarge: 'Payload.TooLarge',
  /** An interjection could not be delivered to the child. */
  InterjectNotDelivered: 'Interject.NotDelivered',
  /** An answer could not be delivered to the child that asked. */
  AnswerNotDelivered: 'Answer.NotDelivered',
  /** A decision on an approval request was refused: its proof did not check out. Non-retryable. */
  ApprovalRefused: 'Approval.Refused',
  /** A model call was not made: its worst case does not fit the run's budget. Non-retryable. */
  BudgetExceeded: 'ModelCall.BudgetExceeded',
  ModelTimeout: 'ModelCall.Timeout',
  ModelConflict: 'ModelCall.Conflict',
  ModelRateLimited: 'ModelCall.RateLimited',
  ModelServerError: 'ModelCall.ServerError',
  ModelBadRequest: 'ModelCall.BadRequest',
  ModelUnauthorized: 'ModelCall.Unauthorized',
  ModelForbidden: 'ModelCall.Forbidden',
  ModelNotFound: 'ModelCall.NotFound',
  ModelUnprocessable: 'ModelCall.Unprocessable',
  ModelRejected: 'ModelCall.Rejected',
  ModelNetwork: 'ModelCall.Network',
  ModelMalformedResponse: 'ModelCall.MalformedResponse',
  ModelEmptyAnswer: 'ModelCall.EmptyAnswer',
  /**
   * A model call sent only what is new since the run's last call, and this worker does not hold the rest.
   * Non-retryable: the workflow sends the whole dialogue instead.
   */
  ContextUnknown: 'ModelCall.ContextUnknown',
  /** A model call names a tool the worker has not registered. Non-retryable. */
  ToolUnknown: 'Tool.Unknown',
  /** A tool threw an error without a type of its own. */
  ToolFailed: 'Tool.Failed',
  HookUnknown: 'Hook.Unknown',
  HookHttpError: 'Hook.HttpError',
  HookBadAnswer: 'Hook.BadAnswer',
  /** A run names a preset the config does not define. Non-retryable. */
  UnknownPreset: 'Config.UnknownPreset',
  /** A run's model has no price, so its cost limits could not hold. Non-retryable. */
  UnknownModelPrice: 'Config.UnknownModelPrice',
  /**
   * A child's preset, given by reference, is neither in its worker's config at that revision nor recorded by its
   * parent. Non-retryable.
   */
  PresetNotRecorded: 'Config.PresetNotRecorded',
  /** A look-up needs a Temporal client the worker was not given. Non-retryable. */
  NoClient: 'Config.NoClient',
} as const;

/** One of Deputy's failure types. */
export type FailureType = (typeof FAILURE)[keyof typeof FAILURE];
