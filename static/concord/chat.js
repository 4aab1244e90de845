// The rater's chat page: send without reloading, show the system "writing", keep what the rater typed
// until the server has stored it (a lost connection or a refused message never empties the box; the
// text also survives a reload, in localStorage, and so does a message typed but not sent: a draft),
// retry a failed reply, end the chat. Without this script
// the page's forms post and the server redirects back: the same views, answering JSON here.
(function () {
  "use strict";
  // The page's words in its language (studies.rating.js_strings, rendered as #rater-strings), keyed by the
  // English text, which is also the fallback; {name} placeholders are filled from ``values``.
  const STRINGS = JSON.parse((document.getElementById("rater-strings") || {}).textContent || "{}");
  const t = (text, values) => (STRINGS[text] || text).replace(/\{(\w+)\}/g, (m, k) => (values && k in values ? values[k] : m));
  const root = document.getElementById("chat");
  const form = document.getElementById("chat-form");
  if (!root || !form) return;
  const box = form.querySelector("textarea");
  const send = form.querySelector("button[type=submit]");
  const problem = form.querySelector("[data-testid=chat-problem]");
  const used = form.querySelector(".chars .used");
  const retryForm = document.querySelector("form[data-action=retry]");
  const endForm = document.querySelector("form[data-action=end]");
  const endButton = endForm.querySelector("button");
  const count = document.querySelector("[data-testid=turn-count] .count");
  const key = root.dataset.storageKey;
  const token = root.dataset.formToken;
  let pending = null; // {text, clientId}: the message until the server confirms it is stored
  let polling = null;
  // The reply is fetched in the background: the page follows the chat's state, looking again after POLL_MS
  // when its first look came too early, each wait then half as long again, up to POLL_MAX_MS.
  const POLL_MS = 500;
  const POLL_MAX_MS = 2000;

  function newId() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID().replace(/-/g, "");
    return Array.from({length: 32}, () => Math.floor(Math.random() * 16).toString(16)).join("");
  }
  function remember() {
    try {
      if (pending) localStorage.setItem(key, JSON.stringify(pending)); else localStorage.removeItem(key);
    } catch (error) { /* storage may be off (private mode, frames): the box still holds the text */ }
  }
  // What is typed but not sent yet: a draft, kept in this browser for this assignment's item across reloads.
  const draftKey = `${key}:draft`;
  function draft(text) {
    try { if (text) localStorage.setItem(draftKey, text); else localStorage.removeItem(draftKey); } catch (error) { /* off */ }
  }
  function say(message) { problem.textContent = message || ""; problem.hidden = !message; }
  // The count is the box's description (read on focus), never announced per keystroke; a screen
  // reader hears it only when the message comes near the limit and when it reaches it.
  const nearLimit = form.querySelector("[data-testid=chars-near-limit]");
  let limitZone = "";
  function counter() {
    used.textContent = String(box.value.length);
    const max = Number(box.dataset.max), left = max - box.value.length;
    const zone = left <= 0 ? "full" : left <= Math.max(20, Math.round(max / 10)) ? "near" : "";
    if (zone !== limitZone && nearLimit) {
      nearLimit.textContent = zone === "full" ? t("No characters left (at most {max}).", {max})
        : zone === "near" ? t("{left} characters left.", {left}) : "";
    }
    limitZone = zone;
  }

  function bubble(list, role, who, text) {
    const item = document.createElement("li");
    item.className = role === "user" ? "turn side-b mine" : "turn side-a";
    const name = document.createElement("span");
    name.className = "speaker";
    name.textContent = who;
    const body = document.createElement("p");
    body.textContent = text; // never innerHTML: the bot's text is untrusted
    item.append(name, body);
    list.append(item);
    list.scrollTop = list.scrollHeight;
  }

  // Per-turn questions after each bot reply (studies.chat.turn_questions): checkboxes (or one choice) per
  // criterion, saved to the server; the next message waits until the last reply's questions are answered.
  function ask(list, index, questions) {
    const asked = questions.turns[String(index)];
    if (!asked) return;
    const box = document.createElement("li");
    box.className = "turn-questions";
    box.setAttribute("data-testid", `turn-questions-${index}`);
    let answered = true;
    questions.criteria.forEach((criterion) => {
      const entry = asked[criterion.name];
      if (!entry) return;
      answered = answered && entry.answered;
      const set = document.createElement("fieldset");
      set.dataset.field = entry.field;
      set.dataset.mode = criterion.mode;
      const legend = document.createElement("legend");
      legend.textContent = criterion.question;
      set.append(legend);
      const options = criterion.labels.map((l) => [l.label, l.label, l.definition]);
      if (criterion.mode === "multilabel") options.push([criterion.none_value, criterion.none_text, ""]);
      options.forEach(([value, text, definition]) => {
        const label = document.createElement("label");
        label.className = "choice";
        if (definition) label.title = definition;
        const input = document.createElement("input");
        input.type = criterion.mode === "categorical" ? "radio" : "checkbox";
        input.name = entry.field;
        input.value = value;
        input.checked = entry.chosen.includes(value);
        label.append(input, document.createTextNode(` ${text}`));
        set.append(label);
      });
      box.append(set);
    });
    const save = document.createElement("button");
    save.type = "button";
    save.className = "secondary";
    save.textContent = answered ? "Change my answers" : "Save my answers";
    save.setAttribute("data-testid", `turn-questions-save-${index}`);
    const note = document.createElement("span");
    note.className = "muted";
    note.setAttribute("role", "status");
    note.textContent = answered ? "Saved" : "Answer these before your next message.";
    save.addEventListener("click", () => {
      const answers = {};
      box.querySelectorAll("fieldset").forEach((set) => {
        const ticked = Array.from(set.querySelectorAll("input:checked")).map((input) => input.value);
        answers[set.dataset.field] = set.dataset.mode === "categorical" ? (ticked[0] || "") : ticked;
      });
      fetch(root.dataset.questionsUrl, {method: "POST", credentials: "omit", body: JSON.stringify({answers}),
        headers: {"Content-Type": "application/json", "Accept": "application/json", "X-Concord-Form-Token": token}})
        .then((response) => response.json().then((data) => ({response, data})))
        .then(({response, data}) => {
          if (!response.ok) { say(data.error || "Those answers could not be saved."); return; }
          say("");
          render(data);
        })
        .catch(() => say("The connection was lost; please save your answers again."));
    });
    box.append(save, note);
    list.append(box);
  }

  function render(state) {
    const sections = root.querySelectorAll(".chat-side");
    state.sides.forEach((side, i) => {
      const section = sections[i];
      if (!section) return;
      section.dataset.status = side.status;
      const list = section.querySelector(".chat");
      list.replaceChildren();
      side.turns.forEach((turn) => {
        bubble(list, turn.role, turn.who, turn.text);
        if (state.questions && turn.role === "system") ask(list, turn.index, state.questions);
      });
      section.querySelector(".typing").hidden = side.status !== "waiting";
      const error = section.querySelector(".bot-error");
      error.textContent = side.error ? `${side.error} Your message is saved: try again, or end the chat.` : "";
      error.hidden = !side.error;
    });
    count.textContent = String(state.exchanges);
    box.disabled = send.disabled = !state.can_send;
    retryForm.hidden = !state.can_retry;
    endButton.disabled = !state.can_end && !state.ended;
    if (state.ended) endButton.textContent = t("Rate the conversation");
    if (state.waiting && !polling) follow(state.reply_expected_ms);
    if (!state.waiting && polling) { clearTimeout(polling); polling = null; }
    if (state.can_send) box.focus();
  }

  function post(url, fields) {
    const body = new URLSearchParams({form_token: token, ...fields});
    return fetch(url, {method: "POST", body, credentials: "omit",
                       headers: {"Accept": "application/json", "X-Concord-Form-Token": token}});
  }

  function poll(light) {
    fetch(root.dataset.stateUrl + (light ? "?waiting=1" : ""), {headers: {"Accept": "application/json"}, credentials: "omit"})
      .then((r) => (r.ok ? r.json() : null))
      .then((state) => { if (state && !state.unchanged) render(state); }).catch(() => {});
  }
  // While the system writes: the first look when the replies so far were stored (the server's median
  // wait, its own delays included), up to 0.2 s later at random (raters who chat in step do not all look
  // in the same instant), then less and less often; each a light request until something changed.
  function follow(expectedMs) {
    let wait = POLL_MS;
    const look = () => {
      poll(true);
      polling = setTimeout(look, wait);
      wait = Math.min(POLL_MAX_MS, wait * 1.5);
    };
    const first = Math.min(10000, Math.max(POLL_MS, (expectedMs || 1000) + 100));
    polling = setTimeout(look, first + Math.random() * 200);
  }

  function showWaiting(text) {
    root.querySelectorAll(".chat-side").forEach((section) => {
      bubble(section.querySelector(".chat"), "user", "You", text);
      section.querySelector(".typing").hidden = false;
      section.querySelector(".bot-error").hidden = true;
    });
    box.disabled = send.disabled = true;
    endButton.disabled = true;
  }

  function deliver(tries) {
    post(root.dataset.turnUrl, {text: pending.text, client_id: pending.clientId})
      .then((response) => response.json().then((data) => ({response, data})))
      .then(({response, data}) => {
        if (response.ok) {
          pending = null;
          remember();
          draft("");
          box.value = "";
          counter();
          say("");
          render(data);
          return;
        }
        // Refused (too long, too fast, the chat's state): the text stays in the box, the reason is shown.
        say(data.error || t("The message could not be sent."));
        if (data.state) render(data.state);
        if (response.status !== 429) { box.disabled = send.disabled = false; }
        if (response.status === 429) {
          const wait = Number(response.headers.get("Retry-After") || 5);
          setTimeout(() => { box.disabled = send.disabled = false; }, wait * 1000);
        }
      })
      .catch(() => {
        if (tries < 3) { setTimeout(() => deliver(tries + 1), 1000 * (tries + 1)); return; }
        say(t("The connection was lost. Your message is kept in the box: send it again when you are back online."));
        box.disabled = send.disabled = false;
        poll();
      });
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = box.value.trim();
    if (!text) { say(t("Type a message first.")); return; }
    if (text.length > Number(box.dataset.max)) { say(`A message may have at most ${box.dataset.max} characters.`); return; }
    // The same text sent again keeps its id (a re-send is stored once); a changed text is a new message.
    if (!pending || pending.text !== text) pending = {text, clientId: newId()};
    remember();
    say("");
    showWaiting(text);
    deliver(0);
  });
  box.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) { event.preventDefault(); form.requestSubmit(); }
  });
  box.addEventListener("input", () => { counter(); draft(box.value); });

  function action(formElement) {
    formElement.addEventListener("submit", (event) => {
      event.preventDefault();
      const retrying = formElement === retryForm;
      if (retrying) {
        root.querySelectorAll(".chat-side").forEach((section) => {
          if (section.dataset.status === "failed") {
            section.querySelector(".typing").hidden = false;
            section.querySelector(".bot-error").hidden = true;
          }
        });
        retryForm.hidden = true;
      }
      post(formElement.action, {})
        .then((response) => response.json().then((data) => ({response, data})))
        .then(({response, data}) => {
          if (!response.ok) { say(data.error || t("That did not work.")); if (data.state) render(data.state); return; }
          if (!retrying && data.ended) { window.location.assign(data.urls.rate); return; }
          render(data);
        })
        .catch(() => say(t("The connection was lost; please try again.")));
    });
  }
  action(retryForm);
  action(endForm);

  try {
    const saved = JSON.parse(localStorage.getItem(key) || "null");
    const mine = root.querySelectorAll(".chat-side:first-child .turn.mine p");
    const lastSent = mine.length ? mine[mine.length - 1].textContent : null;
    if (saved && saved.text && saved.text === lastSent) localStorage.removeItem(key); // it was stored after all
    else if (saved && saved.text && !box.value) { pending = saved; box.value = saved.text; }
    const typed = localStorage.getItem(draftKey);
    if (typed && !box.value) box.value = typed;  // typed, never sent, then the page was reloaded
  } catch (error) { /* nothing saved */ }
  counter();
  if (root.querySelector(".chat-side[data-status=waiting]")) follow(0);
  else if (root.dataset.questionsUrl && root.dataset.asks) poll();  // draw the questions after each reply
})();
