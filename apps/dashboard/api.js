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

/// GET (or `method`) `path`; the parsed JSON answer, or an ApiError.
export async function api(path, {method = 'GET', signal} = {}) {
  let res;
  try {
    res = await fetch(path, {method, signal, cache: 'no-store', credentials: 'same-origin',
                             headers: {'X-CodefyUI-CSRF': csrf}});
  } catch (e) {
    if (e.name === 'AbortError')
      throw e;
    throw new ApiError(0, `the server did not answer ${method} ${path} (${e.message}); is it still running?`);
  }
  const text = await res.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch (e) {
    body = null;
  }
  if (!res.ok) {
    const detail = body && typeof body.detail === 'string' ? body.detail
                                                           : `HTTP ${res.status}: ${text.slice(0, 200)}`;
    throw new ApiError(res.status, detail);
  }
  return body;
}

/// A POST that changes something (cancel, drain): the answer, or an ApiError.
export function act(path) {
  return api(path, {method: 'POST'});
}
