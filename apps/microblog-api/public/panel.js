/*
 * Digital Citizenship Quest – microblog panel (served at GET / by microblog-api).
 *
 * Plain browser script, no build step, no modules, no inline handlers (the service sends a strict
 * Content-Security-Policy). All user text is inserted with textContent / createElement, never innerHTML.
 * The API base is relative (/api), so the panel talks to the service that served it.
 *
 * DOM used by this script (ids come from index.html, classes are created here):
 *
 *   #quest-post-form            the post form: #student_name, #quest_topic (six topics, empty first
 *                               option), #content (maxlength 280), #content-counter, #quest-post-submit
 *                               (reads "Sharing..." and is disabled while the request runs)
 *   #message-display            aria-live status area; classes .message + .message-success | .message-error;
 *                               success messages hide themselves after 5 s, errors stay until replaced
 *   #quest-posts-display        the list (aria-busy while loading); holds .quest-post cards or one
 *                               p.empty-state ("No quest posts yet. Be the first to share!")
 *   #refresh-button             reloads the list
 *   #live-status                "Offline, catching up…", shown while the live stream is disconnected
 *   #load-older-button          shown when GET /api/microblog sent Link rel="next"; appends older posts
 *
 *   article.quest-post[data-post-id="<id>"]     one card per post
 *     .post-header > .post-author, .post-topic[data-topic="<slug>"], time.post-time[datetime]
 *     p.post-content
 *     .post-reactions > button.reaction-button[data-reaction="<kind>"] (the like one also has
 *                       .like-button) > span.reaction-emoji, span.reaction-label, span.reaction-count
 *     section.replies-container#replies-<id>
 *       .reply-count                 "0 replies" / "1 reply" / "N replies" (from reply_count)
 *       ul.replies-list > li.reply[data-reply-id="<id>"] > .reply-author ("Anonymous" when null),
 *                                                          time.reply-time, p.reply-content
 *       p.replies-more               when reply_count is larger than the embedded replies
 *       form.reply-form              input.reply-name-input (optional, maxlength 50),
 *                                    textarea.reply-content-input (required, maxlength 280),
 *                                    button.reply-submit (reads "Replying..." while running)
 *
 * Live updates: an EventSource on /api/microblog/events (`post`, `reply`, `reaction`, `reset`). The list
 * is loaded once the stream is open, so nothing written after the list's snapshot can be missed; events
 * that arrive while a list loads wait and are applied after it. Posts and replies are shown once (by
 * id), counts are the server's. EventSource reconnects by itself with Last-Event-ID and the server
 * replays what was missed; a stream the server refused (a 503) is reopened here after a pause, from
 * the last event id seen. `reset` (the id is too old) reloads the list.
 */
(function () {
  'use strict';

  var API_BASE = '/api';
  var LIST_PATH = API_BASE + '/microblog';
  var STREAM_PATH = API_BASE + '/microblog/events';
  // Replies a listed post embeds: a card showing that many shows the first ones only.
  var EMBEDDED_REPLIES = 100;
  // How long the first list load waits for the stream to open before loading anyway.
  var STREAM_OPEN_WAIT_MS = 3000;
  // Pause before reopening a stream the server refused (EventSource gives up on a non-200).
  var STREAM_REOPEN_MS = 3000;
  var MESSAGE_HIDE_MS = 5000;
  var CONTENT_MAX = 280;

  var TOPIC_LABELS = {
    digital_footprint: 'Digital Footprint',
    online_safety: 'Online Safety',
    digital_literacy: 'Digital Literacy',
    cyberbullying: 'Cyberbullying',
    privacy_security: 'Privacy & Security',
    digital_ethics: 'Digital Ethics',
  };

  var REACTIONS = [
    { kind: 'like', emoji: '\u{1F44D}', label: 'Like' },
    { kind: 'love', emoji: '\u2764\uFE0F', label: 'Love' },
    { kind: 'celebrate', emoji: '\u{1F389}', label: 'Celebrate' },
    { kind: 'insightful', emoji: '\u{1F4A1}', label: 'Insightful' },
    { kind: 'support', emoji: '\u{1F91D}', label: 'Support' },
  ];

  var NETWORK_DETAIL = 'the server could not be reached. Please check your connection and try again.';

  var els = null;
  var state = {
    generation: 0,
    nextUrl: null,
    messageTimer: null,
    loadingOlder: false,
    // live stream: open, the last event id seen, events held back while the list loads (null: none loading)
    live: false,
    lastEventId: null,
    heldEvents: null,
  };
  var timeFormat = null;

  // ---------------------------------------------------------------- helpers

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function asText(value, fallback) {
    if (typeof value === 'string' && value.length > 0) return value;
    if (typeof value === 'number') return String(value);
    return fallback;
  }

  function asCount(value) {
    return typeof value === 'number' && isFinite(value) && value >= 0 ? Math.floor(value) : 0;
  }

  function postIdOf(post) {
    if (!post || typeof post !== 'object') return null;
    var id = post.id;
    if (typeof id === 'number' && Number.isInteger(id) && id > 0) return id;
    if (typeof id === 'string' && /^[1-9][0-9]*$/.test(id)) return Number(id);
    return null;
  }

  function topicLabel(slug) {
    if (typeof slug === 'string' && Object.prototype.hasOwnProperty.call(TOPIC_LABELS, slug)) {
      return TOPIC_LABELS[slug];
    }
    return asText(slug, 'General');
  }

  function formatTime(timestamp) {
    if (typeof timestamp !== 'string' || timestamp === '') return '';
    var date = new Date(timestamp);
    if (isNaN(date.getTime())) return timestamp;
    try {
      if (!timeFormat)
        timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
      return timeFormat.format(date);
    } catch {
      return date.toLocaleString();
    }
  }

  function timeElement(className, timestamp) {
    var node = el('time', className, formatTime(timestamp));
    if (typeof timestamp === 'string' && timestamp !== '') {
      node.setAttribute('datetime', timestamp);
      node.title = timestamp;
    }
    return node;
  }

  function replyCountText(count) {
    return count === 1 ? '1 reply' : count + ' replies';
  }

  function setBusy(button, busy, busyText) {
    if (!button) return;
    if (busy) {
      if (!button.dataset.idleText) button.dataset.idleText = button.textContent.trim();
      button.disabled = true;
      button.textContent = busyText;
    } else {
      button.disabled = false;
      if (button.dataset.idleText) button.textContent = button.dataset.idleText;
    }
  }

  // ---------------------------------------------------------------- messages

  function clearMessageTimer() {
    if (state.messageTimer) {
      clearTimeout(state.messageTimer);
      state.messageTimer = null;
    }
  }

  function hideMessage() {
    clearMessageTimer();
    els.message.textContent = '';
    els.message.className = 'message';
  }

  function showMessage(text, kind) {
    clearMessageTimer();
    els.message.textContent = text;
    els.message.className = 'message message-' + kind;
    if (kind === 'success') {
      state.messageTimer = setTimeout(hideMessage, MESSAGE_HIDE_MS);
    }
  }

  // ---------------------------------------------------------------- HTTP

  function ApiError(detail, status) {
    this.name = 'ApiError';
    this.message = detail;
    this.detail = detail;
    this.status = status;
  }
  ApiError.prototype = Object.create(Error.prototype);
  ApiError.prototype.constructor = ApiError;

  function detailOf(err) {
    if (err && typeof err.detail === 'string' && err.detail) return err.detail;
    return 'something went wrong. Please try again.';
  }

  // Reads an RFC 9457 problem-details body: prefers `detail`, then `title`, then the status code.
  function problemDetail(response) {
    var fallback = 'the server answered with status ' + response.status + '.';
    var contentType = (response.headers && response.headers.get('content-type')) || '';
    if (!/json/i.test(contentType)) return Promise.resolve(fallback);
    return response.json().then(
      function (body) {
        if (body && typeof body === 'object') {
          if (typeof body.detail === 'string' && body.detail.trim()) return body.detail.trim();
          if (typeof body.title === 'string' && body.title.trim()) return body.title.trim();
        }
        return fallback;
      },
      function () {
        return fallback;
      },
    );
  }

  // Resolves to { body, response } for a 2xx with a JSON body; rejects with an ApiError otherwise.
  function requestJson(url, options) {
    var init = options || {};
    init.headers = init.headers || {};
    init.headers.Accept = 'application/json';
    init.credentials = 'same-origin';
    return fetch(url, init).then(
      function (response) {
        if (!response.ok) {
          return problemDetail(response).then(function (detail) {
            throw new ApiError(detail, response.status);
          });
        }
        return response.json().then(
          function (body) {
            return { body: body, response: response };
          },
          function () {
            throw new ApiError('the server sent an unexpected answer.', response.status);
          },
        );
      },
      function () {
        throw new ApiError(NETWORK_DETAIL, 0);
      },
    );
  }

  function postJson(path, payload) {
    return requestJson(API_BASE + path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(payload),
    });
  }

  // Link: </api/microblog?before=ID&limit=N>; rel="next"  →  "/api/microblog?before=ID&limit=N"
  // Only same-origin links to the list are followed.
  function parseNextLink(header) {
    if (!header) return null;
    var parts = header.split(/,(?=\s*<)/);
    for (var i = 0; i < parts.length; i++) {
      var match = /^\s*<([^>]*)>(.*)$/.exec(parts[i]);
      if (!match) continue;
      var relMatch = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,]+))/i.exec(match[2]);
      if (!relMatch) continue;
      var rels = (relMatch[1] || relMatch[2] || '').toLowerCase().split(/\s+/);
      if (rels.indexOf('next') === -1) continue;
      try {
        var url = new URL(match[1], window.location.href);
        if (url.origin !== window.location.origin || url.pathname !== LIST_PATH) return null;
        return url.pathname + url.search;
      } catch {
        return null;
      }
    }
    return null;
  }

  // ---------------------------------------------------------------- rendering

  function buildReply(reply) {
    var item = el('li', 'reply');
    if (reply && reply.id !== undefined && reply.id !== null) item.dataset.replyId = String(reply.id);
    var meta = el('div', 'reply-meta');
    meta.appendChild(el('span', 'reply-author', asText(reply && reply.student_name, 'Anonymous')));
    meta.appendChild(timeElement('reply-time', reply && reply.timestamp));
    item.appendChild(meta);
    item.appendChild(el('p', 'reply-content', asText(reply && reply.content, '')));
    return item;
  }

  function buildReactions(reactions) {
    var group = el('div', 'post-reactions');
    group.setAttribute('role', 'group');
    group.setAttribute('aria-label', 'Reactions');
    REACTIONS.forEach(function (reaction) {
      var button = el('button', 'reaction-button' + (reaction.kind === 'like' ? ' like-button' : ''));
      button.type = 'button';
      button.dataset.reaction = reaction.kind;
      var emoji = el('span', 'reaction-emoji', reaction.emoji);
      emoji.setAttribute('aria-hidden', 'true');
      button.appendChild(emoji);
      button.appendChild(el('span', 'reaction-label', reaction.label));
      button.appendChild(el('span', 'reaction-count', asCount(reactions && reactions[reaction.kind])));
      group.appendChild(button);
    });
    return group;
  }

  function updateReactions(card, reactions) {
    if (!reactions || typeof reactions !== 'object') return;
    var buttons = card.querySelectorAll('.reaction-button');
    for (var i = 0; i < buttons.length; i++) {
      var kind = buttons[i].dataset.reaction;
      if (Object.prototype.hasOwnProperty.call(reactions, kind)) {
        buttons[i].querySelector('.reaction-count').textContent = String(asCount(reactions[kind]));
      }
    }
  }

  function setReplyCount(container, count) {
    container.dataset.replyCount = String(count);
    container.querySelector('.reply-count').textContent = replyCountText(count);
    var shown = container.querySelectorAll('.reply').length;
    var more = container.querySelector('.replies-more');
    if (count > shown) {
      more.textContent = 'Showing the first ' + shown + ' of ' + count + ' replies.';
      more.hidden = false;
    } else {
      more.textContent = '';
      more.hidden = true;
    }
  }

  function buildReplyForm(postId) {
    var form = el('form', 'reply-form');
    form.setAttribute('aria-label', 'Reply to this post');

    var nameField = el('div', 'field field-inline');
    var nameLabel = el('label', null, 'Your name (optional)');
    nameLabel.htmlFor = 'reply-name-' + postId;
    var nameInput = el('input', 'reply-name-input');
    nameInput.type = 'text';
    nameInput.id = 'reply-name-' + postId;
    nameInput.name = 'student_name';
    nameInput.maxLength = 50;
    nameInput.autocomplete = 'off';
    nameField.appendChild(nameLabel);
    nameField.appendChild(nameInput);

    var contentField = el('div', 'field field-inline');
    var contentLabel = el('label', null, 'Your reply');
    contentLabel.htmlFor = 'reply-content-' + postId;
    var contentInput = el('textarea', 'reply-content-input');
    contentInput.id = 'reply-content-' + postId;
    contentInput.name = 'content';
    contentInput.maxLength = CONTENT_MAX;
    contentInput.rows = 2;
    contentInput.required = true;
    contentField.appendChild(contentLabel);
    contentField.appendChild(contentInput);

    var submit = el('button', 'button button-secondary reply-submit', 'Reply');
    submit.type = 'submit';

    form.appendChild(nameField);
    form.appendChild(contentField);
    form.appendChild(submit);
    return form;
  }

  function buildPost(post, postId) {
    var author = asText(post.student_name, 'Anonymous');
    var card = el('article', 'quest-post');
    card.dataset.postId = String(postId);
    card.setAttribute('aria-label', 'Quest post by ' + author);

    var header = el('header', 'post-header');
    header.appendChild(el('span', 'post-author', author));
    var topic = el('span', 'post-topic', topicLabel(post.quest_topic));
    if (typeof post.quest_topic === 'string') topic.dataset.topic = post.quest_topic;
    header.appendChild(topic);
    header.appendChild(timeElement('post-time', post.timestamp));
    card.appendChild(header);

    card.appendChild(el('p', 'post-content', asText(post.content, '')));
    card.appendChild(buildReactions(post.reactions));

    var replies = Array.isArray(post.replies) ? post.replies : [];
    var container = el('section', 'replies-container');
    container.id = 'replies-' + postId;
    container.setAttribute('aria-label', 'Replies');
    container.appendChild(el('h3', 'reply-count'));
    var list = el('ul', 'replies-list');
    replies.forEach(function (reply) {
      list.appendChild(buildReply(reply));
    });
    container.appendChild(list);
    container.appendChild(el('p', 'replies-more'));
    container.appendChild(buildReplyForm(postId));
    card.appendChild(container);

    var count = typeof post.reply_count === 'number' ? asCount(post.reply_count) : replies.length;
    setReplyCount(container, Math.max(count, replies.length));
    return card;
  }

  function findCard(postId) {
    var cards = els.list.querySelectorAll('.quest-post');
    for (var i = 0; i < cards.length; i++) {
      if (cards[i].dataset.postId === String(postId)) return cards[i];
    }
    return null;
  }

  function clearList() {
    while (els.list.firstChild) els.list.removeChild(els.list.firstChild);
  }

  function showEmptyState() {
    clearList();
    els.list.appendChild(el('p', 'empty-state', 'No quest posts yet. Be the first to share!'));
  }

  // Appends the posts that are not on the page yet; returns how many were added.
  function appendPosts(posts) {
    var fragment = document.createDocumentFragment();
    var added = 0;
    posts.forEach(function (post) {
      var postId = postIdOf(post);
      if (postId === null || findCard(postId)) return;
      fragment.appendChild(buildPost(post, postId));
      added++;
    });
    els.list.appendChild(fragment);
    return added;
  }

  function setNextUrl(url) {
    state.nextUrl = url;
    els.loadOlder.hidden = !url;
  }

  // ---------------------------------------------------------------- list loading

  function loadPosts() {
    var generation = ++state.generation;
    if (!state.heldEvents) state.heldEvents = [];
    setNextUrl(null);
    els.list.setAttribute('aria-busy', 'true');
    return requestJson(LIST_PATH, { cache: 'no-store' })
      .then(function (result) {
        if (generation !== state.generation) return;
        if (!Array.isArray(result.body)) throw new ApiError('unexpected list format', result.response.status);
        clearList();
        if (appendPosts(result.body) === 0) showEmptyState();
        setNextUrl(parseNextLink(result.response.headers.get('link')));
      })
      .catch(function () {
        if (generation !== state.generation) return;
        clearList();
        setNextUrl(null);
        showMessage('Unable to load quest posts.', 'error');
      })
      .then(function () {
        if (generation !== state.generation) return;
        applyHeldEvents();
        els.list.removeAttribute('aria-busy');
      });
  }

  function loadOlderPosts() {
    if (!state.nextUrl || state.loadingOlder) return Promise.resolve();
    var generation = state.generation;
    state.loadingOlder = true;
    setBusy(els.loadOlder, true, 'Loading...');
    return requestJson(state.nextUrl, { cache: 'no-store' })
      .then(function (result) {
        if (generation !== state.generation) return;
        if (!Array.isArray(result.body)) throw new ApiError('unexpected list format', result.response.status);
        appendPosts(result.body);
        setNextUrl(parseNextLink(result.response.headers.get('link')));
      })
      .catch(function () {
        if (generation !== state.generation) return;
        showMessage('Unable to load older quest posts.', 'error');
      })
      .then(function () {
        state.loadingOlder = false;
        setBusy(els.loadOlder, false);
      });
  }

  // ---------------------------------------------------------------- live updates

  function setOffline(offline) {
    if (els.liveStatus) els.liveStatus.hidden = !offline;
  }

  // Shows a post the list does not have yet, in id order (a newer one at the top); an older one than
  // the page's last belongs to a page not loaded yet.
  function showNewPost(post) {
    var postId = postIdOf(post);
    if (postId === null || findCard(postId)) return;
    var empty = els.list.querySelector('.empty-state');
    if (empty) empty.remove();
    var cards = els.list.querySelectorAll('.quest-post');
    for (var i = 0; i < cards.length; i++) {
      if (Number(cards[i].dataset.postId) < postId) {
        els.list.insertBefore(buildPost(post, postId), cards[i]);
        return;
      }
    }
    if (!state.nextUrl) els.list.appendChild(buildPost(post, postId));
  }

  function hasReply(container, replyId) {
    var items = container.querySelectorAll('.reply');
    for (var i = 0; i < items.length; i++) {
      if (items[i].dataset.replyId === String(replyId)) return true;
    }
    return false;
  }

  // A reply under its post (when the card shows all its replies so far), and the post's count.
  function showNewReply(reply, replyCount) {
    if (!reply || typeof reply !== 'object') return;
    var card = findCard(reply.post_id);
    if (!card) return;
    var container = card.querySelector('.replies-container');
    var known = asCount(Number(container.dataset.replyCount));
    if (!hasReply(container, reply.id)) {
      var shown = container.querySelectorAll('.reply').length;
      if (shown >= known && shown < EMBEDDED_REPLIES) {
        container.querySelector('.replies-list').appendChild(buildReply(reply));
      }
    }
    setReplyCount(container, Math.max(known, asCount(replyCount)));
  }

  function applyEvent(kind, data) {
    if (!data || typeof data !== 'object') return;
    if (kind === 'post') showNewPost(data);
    else if (kind === 'reply') showNewReply(data.reply, data.reply_count);
    else if (kind === 'reaction') {
      var card = findCard(data.post_id);
      if (card) updateReactions(card, data.reactions);
    }
  }

  function onStreamEvent(kind, event) {
    if (event.lastEventId) state.lastEventId = event.lastEventId;
    var data;
    try {
      data = JSON.parse(event.data);
    } catch {
      return;
    }
    if (state.heldEvents) state.heldEvents.push([kind, data]);
    else applyEvent(kind, data);
  }

  function applyHeldEvents() {
    var held = state.heldEvents || [];
    state.heldEvents = null;
    held.forEach(function (entry) {
      applyEvent(entry[0], entry[1]);
    });
  }

  // Opens the stream; `onFirstOpen` runs once, when it first opens (or after a wait if it does not).
  function connectStream(onFirstOpen) {
    var first = onFirstOpen;
    var startList = function () {
      if (!first) return;
      var run = first;
      first = null;
      run();
    };
    if (typeof EventSource === 'undefined') {
      startList();
      return;
    }
    var url = STREAM_PATH;
    if (state.lastEventId) url += '?last_event_id=' + encodeURIComponent(state.lastEventId);
    var source = new EventSource(url);
    var wait = setTimeout(startList, STREAM_OPEN_WAIT_MS);
    source.addEventListener('open', function () {
      state.live = true;
      setOffline(false);
      clearTimeout(wait);
      startList();
    });
    source.addEventListener('error', function () {
      state.live = false;
      setOffline(true);
      // EventSource reconnects by itself after a network error, but not after an HTTP error (503).
      if (source.readyState === EventSource.CLOSED) {
        setTimeout(
          function () {
            connectStream(null);
          },
          STREAM_REOPEN_MS * (0.5 + Math.random()),
        );
      }
    });
    ['post', 'reply', 'reaction'].forEach(function (kind) {
      source.addEventListener(kind, function (event) {
        onStreamEvent(kind, event);
      });
    });
    source.addEventListener('reset', function (event) {
      if (event.lastEventId) state.lastEventId = event.lastEventId;
      loadPosts();
    });
  }

  // ---------------------------------------------------------------- actions

  function updateCounter() {
    var length = els.content.value.length;
    els.counter.textContent = length + ' / ' + CONTENT_MAX + ' characters';
  }

  function onSubmitPost(event) {
    event.preventDefault();
    if (els.submit.disabled) return;
    var payload = {
      content: els.content.value,
      quest_topic: els.topic.value,
      student_name: els.name.value,
    };
    var shared = false;
    setBusy(els.submit, true, 'Sharing...');
    var created = null;
    postJson('/microblog', payload)
      .then(function (result) {
        shared = true;
        created = result.body;
        showMessage('Quest post shared successfully!', 'success');
        els.form.reset();
        updateCounter();
      })
      .catch(function (err) {
        showMessage('Could not share your post: ' + detailOf(err), 'error');
      })
      .then(function () {
        setBusy(els.submit, false);
        if (!shared) return;
        // Live: the post is shown now (its event will find it there); else the list is reloaded.
        if (state.live && !state.heldEvents && postIdOf(created) !== null) showNewPost(created);
        else return loadPosts();
      });
  }

  function onReactionClick(button) {
    var card = button.closest('.quest-post');
    if (!card || button.disabled) return;
    var postId = Number(card.dataset.postId);
    var kind = button.dataset.reaction;
    button.disabled = true;
    postJson('/microblog/reaction', { post_id: postId, reaction_type: kind })
      .then(function (result) {
        var target = findCard(postId);
        if (target && result.body && typeof result.body === 'object')
          updateReactions(target, result.body.reactions);
      })
      .catch(function (err) {
        showMessage('Could not add your reaction: ' + detailOf(err), 'error');
      })
      .then(function () {
        button.disabled = false;
      });
  }

  function onReplySubmit(form) {
    var card = form.closest('.quest-post');
    if (!card) return;
    var postId = Number(card.dataset.postId);
    var nameInput = form.querySelector('.reply-name-input');
    var contentInput = form.querySelector('.reply-content-input');
    var submit = form.querySelector('.reply-submit');
    if (submit.disabled) return;
    var payload = { post_id: postId, content: contentInput.value };
    var name = nameInput.value.trim();
    if (name) payload.student_name = name;
    setBusy(submit, true, 'Replying...');
    postJson('/microblog/reply', payload)
      .then(function (result) {
        var reply = result.body;
        var target = findCard(postId);
        if (target && reply && typeof reply === 'object') {
          var container = target.querySelector('.replies-container');
          var exists = false;
          var items = container.querySelectorAll('.reply');
          for (var i = 0; i < items.length; i++) {
            if (items[i].dataset.replyId === String(reply.id)) exists = true;
          }
          if (!exists) {
            container.querySelector('.replies-list').appendChild(buildReply(reply));
            setReplyCount(container, asCount(Number(container.dataset.replyCount)) + 1);
          }
        }
        form.reset();
        showMessage('Reply posted!', 'success');
      })
      .catch(function (err) {
        showMessage('Could not send your reply: ' + detailOf(err), 'error');
      })
      .then(function () {
        setBusy(submit, false);
      });
  }

  // ---------------------------------------------------------------- wiring

  function init() {
    els = {
      form: document.getElementById('quest-post-form'),
      name: document.getElementById('student_name'),
      topic: document.getElementById('quest_topic'),
      content: document.getElementById('content'),
      counter: document.getElementById('content-counter'),
      submit: document.getElementById('quest-post-submit'),
      message: document.getElementById('message-display'),
      list: document.getElementById('quest-posts-display'),
      refresh: document.getElementById('refresh-button'),
      loadOlder: document.getElementById('load-older-button'),
      liveStatus: document.getElementById('live-status'),
    };
    if (!els.form || !els.list || !els.message) return;

    els.form.addEventListener('submit', onSubmitPost);
    els.content.addEventListener('input', updateCounter);
    els.refresh.addEventListener('click', function () {
      loadPosts();
    });
    els.loadOlder.addEventListener('click', function () {
      loadOlderPosts();
    });

    // Event delegation for the cards (they are re-created on every load).
    els.list.addEventListener('click', function (event) {
      var target = event.target;
      var button = target && target.closest ? target.closest('.reaction-button') : null;
      if (button && els.list.contains(button)) onReactionClick(button);
    });
    els.list.addEventListener('submit', function (event) {
      var form = event.target;
      if (form && form.classList && form.classList.contains('reply-form')) {
        event.preventDefault();
        onReplySubmit(form);
      }
    });

    updateCounter();
    connectStream(loadPosts);
  }

  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', init);
  } else {
    init();
  }
})();
