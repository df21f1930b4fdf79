// Every request of the page: JSON both ways, the anti-CSRF header, and errors that carry the
// server's `detail` sentence.

let csrf = 'none';  // the server's "not signed in" value (apps/http_access.hpp, no_csrf)

/// The sign-in's anti-CSRF value, sent with every request from now on.
export function useCsrf(value) {
  csrf = value || 'none';
}

/// A refused or failed request: `detail` is the sentence to show.
export class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
    this.detail = detail;
  }
}

/// GET (or `method`) `path`, with `body` as JSON if given; the parsed JSON answer, or an ApiError.
export async function api(path, {method = 'GET', signal, body} = {}) {
  const headers = {'X-CodefyUI-CSRF': csrf};
  if (body !== undefined)
    headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, {method, signal, cache: 'no-store', credentials: 'same-origin', headers,
                             body: body === undefined ? undefined : JSON.stringify(body)});
  } catch (e) {
    if (e.name === 'AbortError')
      throw e;
    throw new ApiError(0, `the server did not answer ${method} ${path} (${e.message}); is it still running?`);
  }
  const text = await res.text();
  let answer = null;
  try {
    answer = text ? JSON.parse(text) : null;
  } catch (e) {
    answer = null;
  }
  if (!res.ok) {
    const detail = answer && typeof answer.detail === 'string' ? answer.detail
                                                               : `HTTP ${res.status}: ${text.slice(0, 200)}`;
    throw new ApiError(res.status, detail);
  }
  return answer;
}

/// A request that changes something (a POST by default: cancel, drain; PUT sharing, DELETE a
/// worker), with an optional JSON body: the answer, or an ApiError.
export function act(path, {method = 'POST', body} = {}) {
  return api(path, {method, body});
}
