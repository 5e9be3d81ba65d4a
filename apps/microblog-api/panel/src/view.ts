/*
 * The panel's DOM, built with createElement and textContent only (never innerHTML: user text is shown
 * as text). The ids come from public/index.html; the classes are made here:
 *
 *   article.quest-post[data-post-id="<id>"]     one card per post
 *     .post-header > .post-author, .post-topic[data-topic="<slug>"], time.post-time[datetime]
 *     p.post-content
 *     .post-reactions > button.reaction-button[data-reaction="<kind>"] (the like one also has
 *                       .like-button) > span.reaction-emoji, span.reaction-label, span.reaction-count
 *     section.replies-container#replies-<id>[data-reply-count]
 *       .reply-count                 "0 replies" / "1 reply" / "N replies" (from reply_count)
 *       ul.replies-list > li.reply[data-reply-id="<id>"] > .reply-author ("Anonymous" when null),
 *                                                          time.reply-time, p.reply-content
 *       p.replies-more               when reply_count is larger than the replies shown
 *       form.reply-form              input.reply-name-input (optional, maxlength 50),
 *                                    textarea.reply-content-input (required, maxlength 280),
 *                                    button.reply-submit (reads "Replying..." while running)
 *   p.empty-state                    "No quest posts yet. Be the first to share!"
 */
import type { Post, Reply } from '@platform/microblog-client';

export type Reactions = Post['reactions'];
export type ReactionKind = keyof Reactions;

export const CONTENT_MAX = 280;
const NAME_MAX = 50;

const TOPIC_LABELS: Record<Post['quest_topic'], string> = {
  digital_footprint: 'Digital Footprint',
  online_safety: 'Online Safety',
  digital_literacy: 'Digital Literacy',
  cyberbullying: 'Cyberbullying',
  privacy_security: 'Privacy & Security',
  digital_ethics: 'Digital Ethics',
};

const REACTIONS: { kind: ReactionKind; emoji: string; label: string }[] = [
  { kind: 'like', emoji: '\u{1F44D}', label: 'Like' },
  { kind: 'love', emoji: '\u2764\uFE0F', label: 'Love' },
  { kind: 'celebrate', emoji: '\u{1F389}', label: 'Celebrate' },
  { kind: 'insightful', emoji: '\u{1F4A1}', label: 'Insightful' },
  { kind: 'support', emoji: '\u{1F91D}', label: 'Support' },
];

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string | null,
  text?: string | number,
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = String(text);
  return node;
}

/** A non-empty string, else `fallback` (an empty name is shown as "Anonymous"). */
function textOr(value: string | null | undefined, fallback: string): string {
  return typeof value === 'string' && value.length > 0 ? value : fallback;
}

function asCount(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : 0;
}

function topicLabel(slug: string): string {
  return Object.prototype.hasOwnProperty.call(TOPIC_LABELS, slug)
    ? TOPIC_LABELS[slug as Post['quest_topic']]
    : textOr(slug, 'General');
}

let timeFormat: Intl.DateTimeFormat | undefined;

function formatTime(timestamp: string): string {
  const date = new Date(timestamp);
  if (Number.isNaN(date.getTime())) return timestamp;
  try {
    timeFormat ??= new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
    return timeFormat.format(date);
  } catch {
    return date.toLocaleString();
  }
}

function timeElement(className: string, timestamp: string): HTMLTimeElement {
  const node = el('time', className, formatTime(timestamp));
  if (timestamp) {
    node.setAttribute('datetime', timestamp);
    node.title = timestamp;
  }
  return node;
}

export function buildReply(reply: Reply): HTMLLIElement {
  const item = el('li', 'reply');
  item.dataset.replyId = String(reply.id);
  const meta = el('div', 'reply-meta');
  meta.appendChild(el('span', 'reply-author', textOr(reply.student_name, 'Anonymous')));
  meta.appendChild(timeElement('reply-time', reply.timestamp));
  item.appendChild(meta);
  item.appendChild(el('p', 'reply-content', reply.content));
  return item;
}

function buildReactions(reactions: Reactions): HTMLDivElement {
  const group = el('div', 'post-reactions');
  group.setAttribute('role', 'group');
  group.setAttribute('aria-label', 'Reactions');
  for (const reaction of REACTIONS) {
    const button = el('button', 'reaction-button' + (reaction.kind === 'like' ? ' like-button' : ''));
    button.type = 'button';
    button.dataset.reaction = reaction.kind;
    const emoji = el('span', 'reaction-emoji', reaction.emoji);
    emoji.setAttribute('aria-hidden', 'true');
    button.appendChild(emoji);
    button.appendChild(el('span', 'reaction-label', reaction.label));
    button.appendChild(el('span', 'reaction-count', asCount(reactions[reaction.kind])));
    group.appendChild(button);
  }
  return group;
}

/** The counts the server sent (every kind it names). */
export function updateReactions(card: Element, reactions: Reactions): void {
  for (const button of card.querySelectorAll<HTMLButtonElement>('.reaction-button')) {
    const kind = button.dataset.reaction;
    if (kind && Object.prototype.hasOwnProperty.call(reactions, kind)) {
      const count = button.querySelector('.reaction-count');
      if (count) count.textContent = String(asCount(reactions[kind as ReactionKind]));
    }
  }
}

/** The replies a container shows, and the total it knows of. */
export function repliesOf(container: HTMLElement): { shown: number; known: number } {
  return {
    shown: container.querySelectorAll('.reply').length,
    known: asCount(Number(container.dataset.replyCount)),
  };
}

export function hasReply(container: Element, replyId: number): boolean {
  return container.querySelector(`.reply[data-reply-id="${replyId}"]`) !== null;
}

export function setReplyCount(container: HTMLElement, count: number): void {
  container.dataset.replyCount = String(count);
  container.querySelector('.reply-count')!.textContent = count === 1 ? '1 reply' : `${count} replies`;
  const shown = container.querySelectorAll('.reply').length;
  const more = container.querySelector<HTMLElement>('.replies-more')!;
  if (count > shown) {
    more.textContent = `Showing the first ${shown} of ${count} replies.`;
    more.hidden = false;
  } else {
    more.textContent = '';
    more.hidden = true;
  }
}

function buildReplyForm(postId: number): HTMLFormElement {
  const form = el('form', 'reply-form');
  form.setAttribute('aria-label', 'Reply to this post');

  const nameField = el('div', 'field field-inline');
  const nameLabel = el('label', null, 'Your name (optional)');
  nameLabel.htmlFor = `reply-name-${postId}`;
  const nameInput = el('input', 'reply-name-input');
  nameInput.type = 'text';
  nameInput.id = `reply-name-${postId}`;
  nameInput.name = 'student_name';
  nameInput.maxLength = NAME_MAX;
  nameInput.autocomplete = 'off';
  nameField.append(nameLabel, nameInput);

  const contentField = el('div', 'field field-inline');
  const contentLabel = el('label', null, 'Your reply');
  contentLabel.htmlFor = `reply-content-${postId}`;
  const contentInput = el('textarea', 'reply-content-input');
  contentInput.id = `reply-content-${postId}`;
  contentInput.name = 'content';
  contentInput.maxLength = CONTENT_MAX;
  contentInput.rows = 2;
  contentInput.required = true;
  contentField.append(contentLabel, contentInput);

  const submit = el('button', 'button button-secondary reply-submit', 'Reply');
  submit.type = 'submit';

  form.append(nameField, contentField, submit);
  return form;
}

export function buildPost(post: Post): HTMLElement {
  const author = textOr(post.student_name, 'Anonymous');
  const card = el('article', 'quest-post');
  card.dataset.postId = String(post.id);
  card.setAttribute('aria-label', `Quest post by ${author}`);

  const header = el('header', 'post-header');
  header.appendChild(el('span', 'post-author', author));
  const topic = el('span', 'post-topic', topicLabel(post.quest_topic));
  topic.dataset.topic = post.quest_topic;
  header.appendChild(topic);
  header.appendChild(timeElement('post-time', post.timestamp));
  card.appendChild(header);

  card.appendChild(el('p', 'post-content', post.content));
  card.appendChild(buildReactions(post.reactions));

  const replies = post.replies ?? [];
  const container = el('section', 'replies-container');
  container.id = `replies-${post.id}`;
  container.setAttribute('aria-label', 'Replies');
  container.appendChild(el('h3', 'reply-count'));
  const list = el('ul', 'replies-list');
  for (const reply of replies) list.appendChild(buildReply(reply));
  container.appendChild(list);
  container.appendChild(el('p', 'replies-more'));
  container.appendChild(buildReplyForm(post.id));
  card.appendChild(container);

  setReplyCount(container, Math.max(asCount(post.reply_count), replies.length));
  return card;
}

/** A button that reads `busyText` and is disabled while its request runs. */
export function setBusy(button: HTMLButtonElement, busy: boolean, busyText = ''): void {
  if (busy) {
    if (!button.dataset.idleText) button.dataset.idleText = (button.textContent ?? '').trim();
    button.disabled = true;
    button.textContent = busyText;
  } else {
    button.disabled = false;
    if (button.dataset.idleText) button.textContent = button.dataset.idleText;
  }
}
