/**
 * Which versions of its Worker Deployment a run has run on: the one running it now, those its earlier segments ran
 * on, and whether it was asked to look whether Temporal names a newer one. Deterministic code only.
 */
import { workflowInfo } from '@temporalio/workflow';

/** At most this many earlier versions are carried: enough to show where a run came from. */
const KEPT = 10;

export class RunVersions {
  /** Someone asked the run to look at its target version (it then wakes, looks, and moves if it may). */
  checkAsked = false;

  constructor(
    /** `<deployment>:<build id>` of the versions earlier segments ran on, oldest first. */
    readonly earlier: readonly string[] = [],
  ) {}

  /** `<deployment>:<build id>` of the version running this segment; `null` on an unversioned worker. */
  get current(): string | null {
    const version = workflowInfo().currentDeploymentVersion;
    return version ? `${version.deploymentName}:${version.buildId}` : null;
  }

  /** The version this run moved from to the one it runs on now, if it moved. */
  get movedFrom(): string | null {
    const last = this.earlier.at(-1);
    return last !== undefined && last !== this.current ? last : null;
  }

  /** Temporal names another version than this run's as its deployment's target: a newer Deputy is deployed. */
  get targetChanged(): boolean {
    return workflowInfo().targetWorkerDeploymentVersionChanged;
  }

  /** What the next segment carries: these versions, this one last. */
  toResume(): string[] {
    const current = this.current;
    const all = current === null || current === this.earlier.at(-1) ? [...this.earlier] : [...this.earlier, current];
    return all.slice(-KEPT);
  }
}
