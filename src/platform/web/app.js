// The platform's web page: sign in with a token, read and post on your timelines, share files,
// schedule tasks. It speaks the same REST API as every peer. Everything a peer wrote is put on
// the page as text (textContent, never markup), so a message holding <script> shows as text.
'use strict';

const state = { token: sessionStorage.getItem('acx-token'), me: null, timeline: null, users: [], timer: null, shown: '' };
const $ = (id) => document.getElementById(id);

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

/** Only this platform's own http(s) URLs become links or images. */
const safeUrl = (url) => {
  try {
    const parsed = new URL(url, location.href);
    return parsed.origin === location.origin ? parsed.href : null;
  } catch {
    return null;
  }
};

async function api(method, path, body) {
  const headers = { authorization: `Bearer ${state.token}` };
  let payload;
  if (body instanceof FormData) payload = body;
  else if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const response = await fetch(path, { method, headers, body: payload });
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  if (response.status === 401 && path !== '/session') signOut();
  if (!response.ok) throw new Error(data?.detail ?? `HTTP ${response.status}`);
  return data;
}

function showError(error) {
  $('error').textContent = error ? String(error.message ?? error) : '';
}

async function signIn(token) {
  state.token = token;
  try {
    const dashboard = await api('GET', '/users/dashboard');
    state.me = dashboard.identity;
  } catch (error) {
    state.token = null;
    $('sign-in-error').textContent = `Could not sign in: ${error.message}`;
    return;
  }
  sessionStorage.setItem('acx-token', token);
  $('sign-in').hidden = true;
  $('app').hidden = false;
  $('whoami').hidden = false;
  $('sign-in-error').textContent = '';
  document.querySelector('[data-testid=me]').textContent = `@${state.me.handle}`;
  await refresh();
  state.timer = setInterval(() => refresh().catch(showError), 1500);
}

function signOut() {
  sessionStorage.removeItem('acx-token');
  clearInterval(state.timer);
  Object.assign(state, { token: null, me: null, timeline: null, shown: '' });
  $('app').hidden = true;
  $('whoami').hidden = true;
  $('sign-in').hidden = false;
}

async function refresh() {
  const [timelines, users] = await Promise.all([api('GET', '/timelines'), api('GET', '/users')]);
  state.users = users.users;
  renderTimelines(timelines.timelines);
  renderPeople();
  if (state.timeline) await showTimeline(state.timeline);
}

function renderTimelines(timelines) {
  $('timelines').replaceChildren(
    ...timelines.map((t) =>
      el('li', { class: t.uuid === state.timeline ? 'current' : '', 'data-uuid': t.uuid, onclick: () => showTimeline(t.uuid).catch(showError) }, t.name, t.locked ? ' 🔒' : ''),
    ),
  );
}

function renderPeople() {
  $('people').replaceChildren(
    ...state.users.map((u) => {
      const t = u.trust;
      const label = t.mutual ? 'mutual trust' : t.you_trust ? 'you trust' : t.trusts_you ? 'trusts you' : 'no trust';
      const toggle = el('button', { type: 'button', onclick: () => api(t.you_trust ? 'DELETE' : 'POST', `/users/${u.uuid}/trust`, t.you_trust ? undefined : {}).then(refresh).catch(showError) }, t.you_trust ? 'Revoke' : 'Trust');
      return el('li', { 'data-handle': u.handle }, `@${u.handle} (${u.kind}) · ${label}`, toggle);
    }),
  );
}

async function showTimeline(uuid) {
  const [shown, tasks] = await Promise.all([api('GET', `/timelines/${uuid}`), api('GET', `/tasks?timeline=${uuid}`)]);
  const changed = state.timeline !== uuid;
  state.timeline = uuid;
  const t = shown.timeline;
  $('timeline').hidden = false;
  $('timeline-name').textContent = t.name;
  $('locked').hidden = !t.locked;
  $('participants').textContent = `Owner @${t.owner.handle}${t.participants.length ? ` · with ${t.participants.map((p) => `@${p.handle}`).join(', ')}` : ''}`;
  const isOwner = t.owner.uuid === state.me.uuid;
  const candidates = state.users.filter((u) => u.trust.mutual && !t.participants.some((p) => p.uuid === u.uuid) && u.uuid !== t.owner.uuid);
  $('add-who').replaceChildren(...candidates.map((u) => el('option', { value: u.uuid }, `@${u.handle}`)));
  for (const id of ['add-who', 'add-participant']) $(id).hidden = !isOwner || candidates.length === 0;
  $('delete').hidden = !isOwner;
  $('lock').hidden = t.locked;
  for (const li of $('timelines').children) li.className = li.dataset.uuid === uuid ? 'current' : '';
  // Redraw the conversation only when it changed, so reading and selecting text is not disturbed.
  const key = JSON.stringify(shown.items.map((i) => [i.content.uuid, i.updated_at]));
  if (changed || key !== state.shown) {
    state.shown = key;
    const list = $('items');
    const atBottom = list.scrollTop + list.clientHeight >= list.scrollHeight - 4;
    list.replaceChildren(...shown.items.slice().reverse().map(renderItem));
    if (changed || atBottom) list.scrollTop = list.scrollHeight;
  }
  $('tasks').replaceChildren(
    ...tasks.tasks.map((task) =>
      el(
        'li',
        { 'data-status': task.content.status },
        `${task.content.instructions} · ${new Date(task.content.activate_at).toLocaleString()} · ${task.content.status}`,
        task.content.status === 'pending' && task.user.uuid === state.me.uuid
          ? el('button', { type: 'button', onclick: () => api('POST', `/tasks/${task.content.uuid}/cancellation`).then(refresh).catch(showError) }, 'Cancel')
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
  const image = url && file.content_type.startsWith('image/') ? el('img', { src: url, alt: item.content.description || file.filename }) : null;
  return el('li', attrs, meta, el('div', { class: 'body' }, item.content.description || ''), image, url ? el('a', { href: url, target: '_blank', rel: 'noopener' }, `${file.filename} (${file.byte_size} bytes)`) : file.filename);
}

function on(id, handler) {
  $(id).addEventListener('submit', (event) => {
    event.preventDefault();
    showError(null);
    Promise.resolve(handler(event.target)).catch(showError);
  });
}

on('token-form', (form) => signIn(form.token.value.trim()));
on('password-form', async (form) => {
  try {
    const minted = await fetch('/session', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email_address: form.email.value, password: form.password.value, name: 'web page' }) });
    const data = await minted.json();
    if (!minted.ok) throw new Error(data.detail);
    await signIn(data.token);
  } catch (error) {
    $('sign-in-error').textContent = `Could not sign in: ${error.message}`;
  }
});
on('new-timeline', async (form) => {
  const created = await api('POST', '/timelines', { timeline: { name: form.name.value } });
  form.reset();
  state.timeline = created.timeline.uuid;
  await refresh();
});
on('post', async (form) => {
  await api('POST', `/timelines/${state.timeline}/messages`, { message: { body: form.body.value } });
  form.reset();
  await showTimeline(state.timeline);
});
on('upload', async (form) => {
  const data = new FormData();
  data.append('asset[file]', form.file.files[0]);
  data.append('asset[description]', form.description.value);
  await api('POST', `/timelines/${state.timeline}/assets`, data);
  form.reset();
  await showTimeline(state.timeline);
});
on('task', async (form) => {
  // datetime-local is the browser's local time; the API gets it as an absolute ISO time.
  await api('POST', `/timelines/${state.timeline}/tasks`, { task: { instructions: form.instructions.value, activate_at: new Date(form.when.value).toISOString() } });
  form.reset();
  await showTimeline(state.timeline);
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
      state.timeline = null;
      $('timeline').hidden = true;
      return refresh();
    })
    .catch(showError);
});
$('sign-out').addEventListener('click', signOut);

if (state.token) signIn(state.token);
