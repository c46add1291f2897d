import { AcxError, errorMarker, setMarker } from '../../core/errors.ts';

const WORKSPACE_PATH_MARKER = errorMarker('WorkspacePathError');

/** A path the model chose that the workspace refuses (outside it, guarded, missing, not a file), with what to do instead. */
export class WorkspacePathError extends AcxError {
  constructor(message: string, hint = 'Use a relative path inside the workspace, without "..".') {
    super('workspace-path', message, { hint });
    setMarker(this, WORKSPACE_PATH_MARKER);
    this.name = 'WorkspacePathError';
  }

  static override isInstance(error: unknown): error is WorkspacePathError {
    return AcxError.hasMarker(error, WORKSPACE_PATH_MARKER);
  }
}
