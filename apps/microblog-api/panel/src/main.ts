/*
 * Digital Citizenship Quest – the microblog panel (served at GET / by microblog-api; bundled by
 * esbuild into /panel.js, see src/panel/bundle.ts). Every call goes through the service's typed
 * client, @platform/microblog-client, on the origin that served the page.
 *
 * DOM used (ids from public/index.html; the cards' classes in ./view.ts):
 *
 *   #quest-post-form            the post form: #student_name, #quest_topic (six topics, empty first
 *                               option), #content (maxlength 280), #content-counter, #quest-post-submit
 *                               (reads "Sharing..." and is disabled while the request runs)
 *   #message-display            aria-live status area; classes .message + .message-success | .message-error;
 *                               success messages hide themselves after 5 s, errors stay until replaced
 *   #quest-posts-display        the list (aria-busy while loading); holds .quest-post cards or one
 *                               p.empty-state
 *   #refresh-button             reloads the list
 *   #live-status                "Offline, catching up…", shown while the live stream is disconnected
 *   #load-older-button          shown while the list has a next page (Link rel="next"); appends it
 *
 * Live updates: the client's `events()` stream (`post`, `reply`, `reaction`, `reset`). The list is
 * loaded once the stream is open, so nothing written after the list's snapshot can be missed; events
 * that arrive while a list loads wait and are applied after it. Posts and replies are shown once (by
 * id), counts are the server's. `reset` (the last id is older than the server keeps) reloads the list.
 */
import type { ListQuery, MicroblogEvent, Post, Reply, Topic } from '@platform/microblog-client';
import { dataOf, detailOf, panelClient } from './api';
import { followStream } from './live';
import {
  buildPost,
  buildReply,
  CONTENT_MAX,
  el,
  hasReply,
  repliesOf,
  setBusy,
  setReplyCount,
  updateReactions,
  type ReactionKind,
} from './view';

// Replies a listed post embeds: a card showing that many shows the first ones only.
const EMBEDDED_REPLIES = 100;
// How long the first list load waits for the stream to open before loading anyway.
const STREAM_OPEN_WAIT_MS = 3000;
const MESSAGE_HIDE_MS = 5000;

type LiveEvent = Exclude<MicroblogEvent, { event: 'reset' }>;

const microblog = panelClient();

const state = {
  /** Bumped by each list load: an older load's answer is dropped. */
  generation: 0,
  /** The query of the list's next page, while it has one. */
  next: undefined as ListQuery | undefined,
  messageTimer: undefined as ReturnType<typeof setTimeout> | undefined,
  loadingOlder: false,
  /** The stream is open. */
  live: false,
  /** Events held back while the list loads (null: none loading). */
  heldEvents: null as LiveEvent[] | null,
};

function byId<T extends HTMLElement>(id: string): T {
  return document.getElementById(id) as T;
}

let els: ReturnType<typeof findElements>;

function findElements() {
  return {
    form: byId<HTMLFormElement>('quest-post-form'),
    name: byId<HTMLInputElement>('student_name'),
    topic: byId<HTMLSelectElement>('quest_topic'),
    content: byId<HTMLTextAreaElement>('content'),
    counter: byId<HTMLElement>('content-counter'),
    submit: byId<HTMLButtonElement>('quest-post-submit'),
    message: byId<HTMLElement>('message-display'),
    list: byId<HTMLElement>('quest-posts-display'),
    refresh: byId<HTMLButtonElement>('refresh-button'),
    loadOlder: byId<HTMLButtonElement>('load-older-button'),
    liveStatus: byId<HTMLElement>('live-status'),
  };
}

// ---------------------------------------------------------------- messages

function hideMessage(): void {
  clearTimeout(state.messageTimer);
  els.message.textContent = '';
  els.message.className = 'message';
}

function showMessage(text: string, kind: 'success' | 'error'): void {
  clearTimeout(state.messageTimer);
  els.message.textContent = text;
  els.message.className = `message message-${kind}`;
  if (kind === 'success') state.messageTimer = setTimeout(hideMessage, MESSAGE_HIDE_MS);
}

// ---------------------------------------------------------------- the list

function findCard(postId: number): HTMLElement | null {
  return els.list.querySelector<HTMLElement>(`.quest-post[data-post-id="${postId}"]`);
}

function clearList(): void {
  els.list.replaceChildren();
}

function showEmptyState(): void {
  els.list.replaceChildren(el('p', 'empty-state', 'No quest posts yet. Be the first to share!'));
}

/** Appends the posts that are not on the page yet; answers how many were added. */
function appendPosts(posts: Post[]): number {
  const fragment = document.createDocumentFragment();
  let added = 0;
  for (const post of posts) {
    if (findCard(post.id)) continue;
    fragment.appendChild(buildPost(post));
    added++;
  }
  els.list.appendChild(fragment);
  return added;
}

function setNext(next: ListQuery | undefined): void {
  state.next = next;
  els.loadOlder.hidden = !next;
}

async function loadPosts(): Promise<void> {
  const generation = ++state.generation;
  state.heldEvents ??= [];
  setNext(undefined);
  els.list.setAttribute('aria-busy', 'true');
  try {
    const page = await microblog.page();
    if (generation !== state.generation) return;
    clearList();
    if (appendPosts(page.posts) === 0) showEmptyState();
    setNext(page.next);
  } catch {
    if (generation !== state.generation) return;
    clearList();
    setNext(undefined);
    showMessage('Unable to load quest posts.', 'error');
  }
  applyHeldEvents();
  els.list.removeAttribute('aria-busy');
}

async function loadOlderPosts(): Promise<void> {
  if (!state.next || state.loadingOlder) return;
  const generation = state.generation;
  state.loadingOlder = true;
  setBusy(els.loadOlder, true, 'Loading...');
  try {
    const page = await microblog.page(state.next);
    if (generation === state.generation) {
      appendPosts(page.posts);
      setNext(page.next);
    }
  } catch {
    if (generation === state.generation) showMessage('Unable to load older quest posts.', 'error');
  } finally {
    state.loadingOlder = false;
    setBusy(els.loadOlder, false);
  }
}

// ---------------------------------------------------------------- live updates

function setOffline(offline: boolean): void {
  els.liveStatus.hidden = !offline;
}

/**
 * Shows a post the list does not have yet, in id order (a newer one at the top); one older than the
 * page's last belongs to a page not loaded yet.
 */
function showNewPost(post: Post): void {
  if (findCard(post.id)) return;
  els.list.querySelector('.empty-state')?.remove();
  for (const card of els.list.querySelectorAll<HTMLElement>('.quest-post')) {
    if (Number(card.dataset.postId) < post.id) {
      els.list.insertBefore(buildPost(post), card);
      return;
    }
  }
  if (!state.next) els.list.appendChild(buildPost(post));
}

/** A reply under its post (when the card shows all its replies so far), and the post's count. */
function showNewReply(reply: Reply, replyCount: number): void {
  const container = findCard(reply.post_id)?.querySelector<HTMLElement>('.replies-container');
  if (!container) return;
  const { shown, known } = repliesOf(container);
  if (!hasReply(container, reply.id) && shown >= known && shown < EMBEDDED_REPLIES)
    container.querySelector('.replies-list')!.appendChild(buildReply(reply));
  setReplyCount(container, Math.max(known, replyCount));
}

function applyEvent(event: LiveEvent): void {
  if (event.event === 'post') showNewPost(event.data);
  else if (event.event === 'reply') showNewReply(event.data.reply, event.data.reply_count);
  else if (event.event === 'reaction') {
    const card = findCard(event.data.post_id);
    if (card) updateReactions(card, event.data.reactions);
  }
}

function applyHeldEvents(): void {
  const held = state.heldEvents ?? [];
  state.heldEvents = null;
  for (const event of held) applyEvent(event);
}

function onStreamEvent(event: MicroblogEvent): void {
  if (event.event === 'reset') void loadPosts();
  else if (state.heldEvents) state.heldEvents.push(event);
  else applyEvent(event);
}

/** Follows the stream; the list is first loaded when it opens (or after a wait if it does not). */
function goLive(): void {
  let listLoaded = false;
  const loadList = () => {
    if (listLoaded) return;
    listLoaded = true;
    clearTimeout(wait);
    void loadPosts();
  };
  const wait = setTimeout(loadList, STREAM_OPEN_WAIT_MS);
  void followStream(microblog, {
    onOpen() {
      state.live = true;
      setOffline(false);
      loadList();
    },
    onOffline() {
      state.live = false;
      setOffline(true);
    },
    onEvent: onStreamEvent,
  });
}

// ---------------------------------------------------------------- actions

function updateCounter(): void {
  els.counter.textContent = `${els.content.value.length} / ${CONTENT_MAX} characters`;
}

async function onSubmitPost(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  if (els.submit.disabled) return;
  const body = {
    content: els.content.value,
    // The select's value, as chosen (the empty placeholder too: the server's 400 says what is wrong).
    quest_topic: els.topic.value as Topic,
    student_name: els.name.value,
  };
  setBusy(els.submit, true, 'Sharing...');
  let created: Post | undefined;
  try {
    created = await dataOf(microblog.POST('/api/microblog', { body }));
    showMessage('Quest post shared successfully!', 'success');
    els.form.reset();
    updateCounter();
  } catch (error) {
    showMessage(`Could not share your post: ${detailOf(error)}`, 'error');
  } finally {
    setBusy(els.submit, false);
  }
  if (!created) return;
  // Live: the post is shown now (its event will find it there); else the list is reloaded.
  if (state.live && !state.heldEvents) showNewPost(created);
  else await loadPosts();
}

async function onReactionClick(button: HTMLButtonElement): Promise<void> {
  const card = button.closest<HTMLElement>('.quest-post');
  if (!card || button.disabled) return;
  const postId = Number(card.dataset.postId);
  const reactionType = button.dataset.reaction as ReactionKind;
  button.disabled = true;
  try {
    const post = await dataOf(
      microblog.POST('/api/microblog/reaction', {
        body: { post_id: postId, reaction_type: reactionType },
      }),
    );
    const target = findCard(postId);
    if (target) updateReactions(target, post.reactions);
  } catch (error) {
    showMessage(`Could not add your reaction: ${detailOf(error)}`, 'error');
  } finally {
    button.disabled = false;
  }
}

async function onReplySubmit(form: HTMLFormElement): Promise<void> {
  const card = form.closest<HTMLElement>('.quest-post');
  if (!card) return;
  const postId = Number(card.dataset.postId);
  const nameInput = form.querySelector<HTMLInputElement>('.reply-name-input')!;
  const contentInput = form.querySelector<HTMLTextAreaElement>('.reply-content-input')!;
  const submit = form.querySelector<HTMLButtonElement>('.reply-submit')!;
  if (submit.disabled) return;
  const name = nameInput.value.trim();
  // No name: no student_name at all (the reply is anonymous).
  const body = { post_id: postId, content: contentInput.value, ...(name ? { student_name: name } : {}) };
  setBusy(submit, true, 'Replying...');
  try {
    const reply = await dataOf(microblog.POST('/api/microblog/reply', { body }));
    const container = findCard(postId)?.querySelector<HTMLElement>('.replies-container');
    if (container && !hasReply(container, reply.id)) {
      container.querySelector('.replies-list')!.appendChild(buildReply(reply));
      setReplyCount(container, repliesOf(container).known + 1);
    }
    form.reset();
    showMessage('Reply posted!', 'success');
  } catch (error) {
    showMessage(`Could not send your reply: ${detailOf(error)}`, 'error');
  } finally {
    setBusy(submit, false);
  }
}

// ---------------------------------------------------------------- wiring

function init(): void {
  els = findElements();
  if (!els.form || !els.list || !els.message) return;

  els.form.addEventListener('submit', (event) => void onSubmitPost(event));
  els.content.addEventListener('input', updateCounter);
  els.refresh.addEventListener('click', () => void loadPosts());
  els.loadOlder.addEventListener('click', () => void loadOlderPosts());

  // Event delegation for the cards (they are made anew by every load).
  els.list.addEventListener('click', (event) => {
    const button = (event.target as Element | null)?.closest?.<HTMLButtonElement>('.reaction-button');
    if (button && els.list.contains(button)) void onReactionClick(button);
  });
  els.list.addEventListener('submit', (event) => {
    const form = event.target as HTMLFormElement | null;
    if (form?.classList?.contains('reply-form')) {
      event.preventDefault();
      void onReplySubmit(form);
    }
  });

  updateCounter();
  goLive();
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
else init();
