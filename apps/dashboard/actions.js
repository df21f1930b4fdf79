// What every action of the page does around its request: its button disabled meanwhile, and the
// banner cleared on success or showing what was asked with the server's sentence on refusal.
import {report} from './errors.js';

/// Runs `request` for the button `button` (or null); the answer, or null after a failure, which
/// the banner shows as "`what`: detail".
export async function perform(what, button, request) {
  if (button)
    button.disabled = true;
  try {
    const answer = await request();
    report('view:action', null);
    return answer;
  } catch (e) {
    report('view:action', `${what}: ${e.detail || e.message}`);
    return null;
  } finally {
    if (button)
      button.disabled = false;
  }
}
