// The platform's web page: sign in (a token, or an email address and password), read and post
// on your timelines, share files, schedule tasks, manage trust. It speaks the same REST API as
// every peer and polls it, so what agents and people post appears without a reload. Everything a
// peer wrote is put on the page as text (textContent, never markup), so a message holding
// <script> shows as text.
import { ApiError, request } from './api.js';
import { createConversation } from './conversation.js';

/** How often the open page asks for news: new items appear within about this long. */
const POLL_MS = 2000;
/** The timeline list and the people change rarely: with a timeline open, they are asked for on every this many polls. */
const SIDEBAR_EVERY = 5;

const $ = (id) => document.getElementById(id);
const state = { token: null, minted: false, me: null, timeline: null, users: [] };

/** An element with attributes and children; strings become text nodes. */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  return node;
}

// What each list last showed: a poll redraws a list only when its content changed, so the focus,
// a selection or an open <select> in it survives the poll.
const shown = new WeakMap();
function redraw(container, content, build) {
  const key = JSON.stringify(content);
  if (shown.get(container) === key) return;
  shown.set(container, key);
  container.replaceChildren(...build());
}
function clear(...ids) {
  for (const id of ids) {
    $(id).replaceChildren();
    shown.delete($(id));
  }
}

/** Only this platform's own http(s) URLs become links or images. */
function safeUrl(url) {
  try {
    const parsed = new URL(url, location.href);
    return parsed.origin === location.origin ? parsed.href : null;
  } catch {
    return null;
  }
}

/** A request as the signed-in user; a 401 means the token was revoked, which ends the session here. */
async function api(method, path, body) {
  try {
    return await request(method, path, { token: state.token, body });
  } catch (error) {
    if (error instanceof ApiError && error.status === 401 && state.token) signOut('Your session has ended (its token was revoked). Sign in again.', { revoke: false });
    throw error;
  }
}

const say = (id) => (error) => {
  $(id).textContent = error ? String(error.message ?? error) : '';
};
const showError = say('error');
const showNavError = say('nav-error');

// ---- signing in and out

async function signIn(token, { minted = false } = {}) {
  const dashboard = await request('GET', '/users/dashboard', { token });
  Object.assign(state, { token, minted, me: dashboard.identity });
  sessionStorage.setItem('acx-token', token);
  // A token this page minted from a password is this page's to revoke on sign-out; a pasted one is not.
  if (minted) sessionStorage.setItem('acx-token-minted', '1');
  $('sign-in-error').textContent = '';
  $('sign-in').hidden = true;
  $('app').hidden = false;
  $('whoami').hidden = false;
  $('menu').hidden = false;
  document.querySelector('[data-testid=me]').textContent = `@${state.me.handle}`;
  await refresh().catch((error) => {
    $('status').textContent = `${error.message} Trying again…`;
  });
  poller.start();
}

function signOut(reason = '', { revoke = true } = {}) {
  if (revoke && state.minted && state.token) request('DELETE', '/session', { token: state.token }).catch(() => {});
  sessionStorage.removeItem('acx-token');
  sessionStorage.removeItem('acx-token-minted');
  poller.stop();
  conversation.forget();
  clear('timelines', 'people', 'add-who', 'tasks');
  Object.assign(state, { token: null, minted: false, me: null, timeline: null, users: [] });
  setNav(false);
  for (const id of ['app', 'whoami', 'menu', 'skip', 'timeline']) $(id).hidden = true;
  $('no-timeline').hidden = false;
  $('sign-in').hidden = false;
  $('sign-in-error').textContent = reason;
}

/** A sign-in refused with 429: the button waits out Retry-After, counting down. */
function holdOff(button, seconds) {
  const label = button.dataset.label ?? button.textContent;
  button.dataset.label = label;
  button.disabled = true;
  let left = seconds;
  const tick = () => {
    if (left > 0) {
      button.textContent = `Try again in ${left} s`;
      left -= 1;
      setTimeout(tick, 1000);
      return;
    }
    button.disabled = false;
    button.textContent = label;
    $('sign-in-error').textContent = 'You can try to sign in again now.';
  };
  tick();
}

async function signInWith(form, attempt) {
  $('sign-in-error').textContent = '';
  try {
    await attempt();
    form.reset();
  } catch (error) {
    $('sign-in-error').textContent = error.message;
    if (error instanceof ApiError && error.status === 429) holdOff(form.querySelector('button[type=submit]'), error.retryAfter ?? 1);
  }
}

// ---- keeping up: one poll every POLL_MS, never two at once, none while the page is hidden

const poller = {
  timer: null,
  running: false,
  ticks: 0,
  start() {
    this.running = true;
    this.ticks = 0;
    this.schedule(POLL_MS);
  },
  stop() {
    this.running = false;
    clearTimeout(this.timer);
  },
  schedule(ms) {
    clearTimeout(this.timer);
    if (this.running) this.timer = setTimeout(() => this.tick(), ms);
  },
  async tick() {
    let wait = POLL_MS;
    if (document.visibilityState !== 'hidden') {
      try {
        if (++this.ticks % SIDEBAR_EVERY === 0 || !state.timeline) await refresh();
        else await loadTimeline();
        $('status').textContent = '';
      } catch (error) {
        $('status').textContent = `${error.message} Trying again…`;
        if (error.retryAfter) wait = Math.max(wait, error.retryAfter * 1000);
      }
    }
    this.schedule(wait);
  },
};
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible' && poller.running) poller.schedule(0);
});

// ---- what is on the page

async function refresh() {
  const [timelines, users] = await Promise.all([api('GET', '/timelines'), api('GET', '/users')]);
  state.users = users.users;
  renderTimelines(timelines.timelines);
  renderPeople();
  if (state.timeline) await loadTimeline();
}

function renderTimelines(timelines) {
  redraw($('timelines'), timelines.map((t) => [t.uuid, t.name, t.locked]), () =>
    timelines.map((t) =>
      el('li', {}, el('button', { type: 'button', 'data-uuid': t.uuid, 'aria-current': String(t.uuid === state.timeline), onclick: () => choose(t.uuid) }, t.name, t.locked ? ' (locked)' : '')),
    ),
  );
}

function renderPeople() {
  redraw($('people'), state.users.map((u) => [u.uuid, u.handle, u.kind, u.trust]), () =>
    state.users.map((u) => {
      const t = u.trust;
      const label = t.mutual ? 'mutual trust' : t.you_trust ? 'you trust' : t.trusts_you ? 'trusts you' : 'no trust';
      const toggle = el(
        'button',
        {
          type: 'button',
          'aria-label': t.you_trust ? `Revoke your trust in @${u.handle}` : `Trust @${u.handle}`,
          onclick: () => api(t.you_trust ? 'DELETE' : 'POST', `/users/${u.uuid}/trust`, t.you_trust ? undefined : {}).then(refresh).catch(showNavError),
        },
        t.you_trust ? 'Revoke' : 'Trust',
      );
      return el('li', { 'data-handle': u.handle }, el('span', {}, `@${u.handle} (${u.kind}) · ${label}`), toggle);
    }),
  );
}

/** Opens a timeline the person picked; on a phone the list folds away and the message box takes the focus. */
async function choose(uuid) {
  const fromDrawer = document.body.classList.contains('nav-open');
  setTimeline(uuid);
  for (const button of $('timelines').querySelectorAll('button')) button.setAttribute('aria-current', String(button.dataset.uuid === uuid));
  setNav(false);
  try {
    await loadTimeline();
    if (fromDrawer) $('message-body').focus();
  } catch (error) {
    showError(error);
  }
}

// Answers can arrive out of order (a poll and a post at once): an older one never overwrites a newer.
let asked = 0;
let applied = 0;

async function loadTimeline() {
  const uuid = state.timeline;
  const ticket = ++asked;
  let answer;
  try {
    [answer] = await Promise.all([api('GET', `/timelines/${uuid}`), $('task-panel').open ? loadTasks() : null]);
  } catch (error) {
    // Deleted, or we were taken off it: close it rather than fail every poll.
    if (error instanceof ApiError && (error.status === 403 || error.status === 404) && state.timeline === uuid) closeTimeline();
    throw error;
  }
  if (ticket < applied || state.timeline !== uuid) return;
  applied = ticket;
  renderTimeline(answer.timeline);
  conversation.show(uuid, answer.items);
}

/** The timeline's tasks, asked for only while the Tasks panel is open. */
async function loadTasks() {
  const uuid = state.timeline;
  const { tasks } = await api('GET', `/tasks?timeline=${uuid}`);
  if (state.timeline === uuid) renderTasks(tasks);
}

/** The timeline the page shows from now on; what it showed of another one goes. */
function setTimeline(uuid) {
  if (uuid !== state.timeline) clear('tasks', 'add-who');
  state.timeline = uuid;
}

function closeTimeline() {
  setTimeline(null);
  conversation.forget();
  $('timeline').hidden = true;
  $('skip').hidden = true;
  $('no-timeline').hidden = false;
}

function renderTimeline(t) {
  $('no-timeline').hidden = true;
  $('timeline').hidden = false;
  $('skip').hidden = false;
  $('timeline-name').textContent = t.name;
  $('locked').hidden = !t.locked;
  $('participants').textContent = `Owner @${t.owner.handle}${t.participants.length ? ` · with ${t.participants.map((p) => `@${p.handle}`).join(', ')}` : ''}`;
  const isOwner = t.owner.uuid === state.me.uuid;
  const candidates = state.users.filter((u) => u.trust.mutual && !t.participants.some((p) => p.uuid === u.uuid) && u.uuid !== t.owner.uuid);
  redraw($('add-who'), candidates.map((u) => [u.uuid, u.handle]), () => candidates.map((u) => el('option', { value: u.uuid }, `@${u.handle}`)));
  for (const id of ['add-who', 'add-participant']) $(id).hidden = !isOwner || candidates.length === 0;
  $('delete').hidden = !isOwner;
  $('lock').hidden = t.locked;
  $('message-body').disabled = t.locked;
  $('send').disabled = t.locked;
  $('message-body').placeholder = t.locked ? 'This timeline is locked: nobody can post on it.' : 'Write a message (mention an agent with @handle)';
}

function renderTasks(tasks) {
  redraw($('tasks'), tasks.map((task) => [task.content.uuid, task.content.status, task.updated_at]), () =>
    tasks.map((task) =>
      el(
        'li',
        { 'data-status': task.content.status },
        `${task.content.instructions} · ${new Date(task.content.activate_at).toLocaleString()} · ${task.content.status}`,
        task.content.status === 'pending' && task.user.uuid === state.me.uuid
          ? el('button', { type: 'button', 'aria-label': `Cancel the task “${task.content.instructions}”`, onclick: () => api('POST', `/tasks/${task.content.uuid}/cancellation`).then(loadTimeline).catch(showError) }, 'Cancel')
          : null,
      ),
    ),
  );
}

function renderItem(item) {
  const when = new Date(item.created_at).toLocaleString();
  if (item.type === 'webhook_event') {
    return el('li', { class: 'system', 'data-type': item.type }, el('div', { class: 'meta' }, `webhook “${item.webhook_endpoint.content.description}” · ${when}`), el('div', { class: 'body' }, item.content.payload));
  }
  const meta = el('div', { class: 'meta' }, `@${item.user.handle} · ${when}`);
  const attrs = { class: item.user.kind === 'ai' ? 'ai' : 'human', 'data-type': item.type, 'data-author': item.user.handle };
  if (item.type === 'message') return el('li', attrs, meta, el('div', { class: 'body' }, item.content.body));
  if (item.type === 'task') return el('li', { ...attrs, class: 'system' }, meta, el('div', { class: 'body' }, `Task for ${new Date(item.content.activate_at).toLocaleString()}: ${item.content.instructions} (${item.content.status})`));
  const file = item.content.file;
  const url = safeUrl(file.url);
  // The description is the image's text alternative; without one, its file name says at least what it is.
  const image = url && file.content_type.startsWith('image/') ? el('img', { src: url, alt: item.content.description || `image ${file.filename}` }) : null;
  return el('li', attrs, meta, el('div', { class: 'body' }, item.content.description || ''), image, url ? el('a', { href: url, target: '_blank', rel: 'noopener' }, `${file.filename} (${file.byte_size} bytes)`) : file.filename);
}

const conversation = createConversation($('items'), $('jump'), renderItem);

// ---- the sidebar on a phone: behind the Timelines button, closed again by Escape

function setNav(open) {
  document.body.classList.toggle('nav-open', open);
  $('menu').setAttribute('aria-expanded', String(open));
}
$('menu').addEventListener('click', () => setNav(!document.body.classList.contains('nav-open')));
document.addEventListener('keydown', (event) => {
  if (event.key !== 'Escape' || !document.body.classList.contains('nav-open')) return;
  setNav(false);
  $('menu').focus();
});

// ---- forms: each submits once at a time, and says in words what went wrong

function on(id, handler, report = showError) {
  $(id).addEventListener('submit', (event) => {
    event.preventDefault();
    const form = event.target;
    if (form.dataset.busy) return;
    form.dataset.busy = '1';
    report(null);
    Promise.resolve()
      .then(() => handler(form))
      .catch(report)
      .finally(() => delete form.dataset.busy);
  });
}

on('token-form', (form) => signInWith(form, () => signIn(form.token.value.trim())));
on('password-form', (form) =>
  signInWith(form, async () => {
    const minted = await request('POST', '/session', { body: { email_address: form.email.value, password: form.password.value, name: 'web page' } });
    // The password has done its work: out of the page before anything else is shown or loaded.
    form.password.value = '';
    await signIn(minted.token, { minted: true });
  }),
);
on(
  'new-timeline',
  async (form) => {
    const created = await api('POST', '/timelines', { timeline: { name: form.name.value } });
    form.reset();
    setTimeline(created.timeline.uuid);
    await refresh();
    setNav(false);
  },
  showNavError,
);
on('post', async (form) => {
  await api('POST', `/timelines/${state.timeline}/messages`, { message: { body: form.body.value } });
  form.reset();
  await loadTimeline();
});
// Enter sends (so does Ctrl+Enter); Shift+Enter is a new line; Enter that confirms an input method's composition is neither.
$('message-body').addEventListener('keydown', (event) => {
  if (event.key !== 'Enter' || event.shiftKey || event.altKey || event.isComposing) return;
  event.preventDefault();
  $('post').requestSubmit();
});
$('skip').addEventListener('click', (event) => {
  event.preventDefault();
  $('message-body').focus();
});
on('upload', async (form) => {
  const data = new FormData();
  data.append('asset[file]', form.file.files[0]);
  data.append('asset[description]', form.description.value);
  await api('POST', `/timelines/${state.timeline}/assets`, data);
  form.reset();
  await loadTimeline();
});
on('task', async (form) => {
  // datetime-local is the browser's local time; the API gets it as an absolute ISO time.
  await api('POST', `/timelines/${state.timeline}/tasks`, { task: { instructions: form.instructions.value, activate_at: new Date(form.when.value).toISOString() } });
  form.reset();
  await loadTimeline(); // the Tasks panel is open: this brings its list too
});
$('task-panel').addEventListener('toggle', () => {
  if ($('task-panel').open) loadTasks().catch(showError);
});
$('add-participant').addEventListener('click', () => {
  const uuid = $('add-who').value;
  if (uuid) api('POST', `/timelines/${state.timeline}/participations`, { user_id: uuid }).then(refresh).catch(showError);
});
$('lock').addEventListener('click', () => {
  if (confirm('Lock this timeline for good? Nobody can post on it again, and there is no unlock.')) api('POST', `/timelines/${state.timeline}/lock`, {}).then(refresh).catch(showError);
});
$('delete').addEventListener('click', () => {
  if (!confirm('Delete this timeline and everything on it? There is no undo.')) return;
  api('DELETE', `/timelines/${state.timeline}`)
    .then(() => {
      closeTimeline();
      return refresh();
    })
    .catch(showError);
});
$('sign-out').addEventListener('click', () => signOut());

const saved = sessionStorage.getItem('acx-token');
if (saved) {
  signIn(saved, { minted: sessionStorage.getItem('acx-token-minted') === '1' }).catch((error) => {
    sessionStorage.removeItem('acx-token');
    $('sign-in-error').textContent = error.message;
  });
}
