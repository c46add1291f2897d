// The page's client of the platform's REST API, the same API every peer uses. A refusal becomes
// an ApiError whose message is the platform's own sentence (its problem document's `detail`).

export class ApiError extends Error {
  /**
   * @param {string} message what went wrong, in words a person reads
   * @param {number} status the HTTP status (0: the platform could not be reached)
   * @param {number | undefined} retryAfter seconds to wait before trying again (429's Retry-After)
   */
  constructor(message, status, retryAfter) {
    super(message);
    this.status = status;
    this.retryAfter = retryAfter;
  }
}

/** One request; resolves to the parsed JSON answer (null for an empty one). */
export async function request(method, path, { token, body } = {}) {
  const headers = {};
  if (token) headers.authorization = `Bearer ${token}`;
  let payload;
  if (body instanceof FormData) payload = body;
  else if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, { method, headers, body: payload });
  } catch {
    throw new ApiError('Could not reach the platform; is it still running?', 0);
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    // Not JSON (a proxy's error page): the status line below says what happened.
  }
  if (response.ok) return data;
  const seconds = Number.parseInt(response.headers.get('retry-after') ?? '', 10);
  const retryAfter = Number.isFinite(seconds) && seconds > 0 ? seconds : undefined;
  const said = typeof data?.detail === 'string' && data.detail ? data.detail : `The platform answered ${`${response.status} ${response.statusText}`.trim()}.`;
  throw new ApiError(said, response.status, retryAfter);
}
