// The textenvs play page: plain JavaScript over the service's own API (same origin).
// Sessions come from POST /play/api/sessions, steps go to POST /v1/sessions/{id}/step,
// rules from GET /v1/envs. Nothing is fetched from anywhere else.
"use strict";

const $ = (id) => document.getElementById(id);
const SAVED = "textenvs.play.session"; // the running episode, so a reload resumes it
const HELP_WORDS = new Set(["help", "?", "rules"]);
// A valid-command entry that is a command form (`north`, `excavate CELL`, `A north|south`):
// its button fills the input with it, or with its first word when it takes arguments.
const COMMAND_FORM = /^[A-Za-z][\w-]*( [\w|[\]-]+)*$/;

const state = {
  token: sessionStorage.getItem("textenvs.play.token") || "",
  recording: false,
  sets: [],
  envs: new Map(),
  session: null, // {id, env, seed, set, recording, reward, invalid, steps}
  history: JSON.parse(sessionStorage.getItem("textenvs.play.history") || "[]"),
  historyAt: -1,
};

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (state.token) headers.Authorization = "Bearer " + state.token;
  let response;
  try {
    response = await fetch("../" + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new ApiError(0, "network", "The server cannot be reached: " + err.message);
  }
  if (response.status === 204) return null;
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = data.error || {};
    let message = error.message || "the server answered " + response.status;
    const detail = (error.details || [])[0];
    if (detail && detail.msg) message += " (" + detail.loc.slice(1).join(".") + ": " + detail.msg + ")";
    const wait = response.headers.get("Retry-After");
    if (wait) message += " Try again in " + wait + " s.";
    throw new ApiError(response.status, error.code || "error", message);
  }
  return data;
}

function alertUser(message) {
  const box = $("alert");
  box.textContent = message || "";
  box.hidden = !message;
}

// ----- setup -----------------------------------------------------------------------

async function loadSetup() {
  try {
    const setup = await api("GET", "play/api/setup");
    const listing = await api("GET", "v1/envs");
    state.recording = setup.recording;
    state.sets = setup.sets;
    for (const env of listing.envs) state.envs.set(env.name, env);
    $("token-field").hidden = !state.token;
    return true;
  } catch (err) {
    if (err.status === 401) {
      $("token-field").hidden = false;
      $("start").disabled = false; // it sends the token
      alertUser(state.token ? "That token was not accepted." : "This server needs an access token.");
      $("token").focus();
      return false;
    }
    throw err;
  }
}

function fillSetupForm() {
  const params = new URLSearchParams(location.search);
  const envSelect = $("env");
  envSelect.replaceChildren();
  for (const env of state.envs.values()) {
    envSelect.add(new Option(`${env.title} (${env.name})`, env.name));
  }
  const wanted = params.get("env") || localStorage.getItem("textenvs.play.env");
  if (wanted && state.envs.has(wanted)) envSelect.value = wanted;
  if (params.get("seed") !== null) $("seed").value = params.get("seed");
  $("player-field").hidden = !state.recording;
  $("player").required = state.recording;
  // a name typed while the page was loading is kept
  $("player").value ||= params.get("player") || localStorage.getItem("textenvs.play.player") || "";
  const setSelect = $("set");
  setSelect.replaceChildren(new Option("I choose the seed", ""));
  for (const set of state.sets) {
    setSelect.add(new Option(`Baseline set ${set.name} (${set.seeds.length} seeds)`, set.name));
  }
  $("set-field").hidden = state.sets.length === 0;
  const wantedSet = params.get("set");
  if (state.sets.some((s) => s.name === wantedSet)) setSelect.value = wantedSet;
  else if (state.sets.length && params.get("seed") === null) setSelect.value = state.sets[0].name;
  syncSeedField();
  $("start").disabled = false; // ready: the scenarios are listed
}

function syncSeedField() {
  $("seed-field").hidden = Boolean($("set").value);
  showProgress();
}

async function showProgress() {
  const box = $("progress");
  const player = $("player").value.trim();
  if (!state.recording || !player || !$("player").checkValidity()) {
    box.hidden = true;
    return;
  }
  const set = $("set").value;
  const query = "player=" + encodeURIComponent(player) + (set ? "&set=" + encodeURIComponent(set) : "");
  try {
    const progress = await api("GET", "play/api/progress?" + query);
    const done = (progress.recorded[$("env").value] || []).length;
    box.textContent = set
      ? `${player}: ${done} of ${progress.seeds.length} seeds of set ${set} recorded in this scenario.`
      : `${player}: ${done} episode${done === 1 ? "" : "s"} with seeds of your choice recorded in this scenario.`;
    box.hidden = false;
  } catch (err) {
    box.hidden = true;
  }
}

async function startEpisode(event) {
  if (event) event.preventDefault();
  alertUser("");
  if ($("token-field").hidden === false && $("token").value) {
    state.token = $("token").value.trim();
    sessionStorage.setItem("textenvs.play.token", state.token);
    if (state.envs.size === 0) return boot();
  }
  const form = $("setup");
  if (!form.reportValidity()) return;
  const body = { env: $("env").value };
  const set = $("set").value;
  const seedText = $("seed").value.trim();
  if (set) body.set = set;
  else if (seedText) {
    if (!/^\d{1,18}$/.test(seedText)) {
      alertUser("The seed is a whole number (0 or more), or empty for a random one.");
      $("seed").focus();
      return;
    }
    body.seed = Number(seedText);
  }
  if (state.recording) {
    body.player = $("player").value.trim();
    localStorage.setItem("textenvs.play.player", body.player);
  }
  localStorage.setItem("textenvs.play.env", body.env);
  await openSession(body);
}

async function openSession(body) {
  const old = state.session;
  try {
    const created = await api("POST", "play/api/sessions", body);
    if (old) api("DELETE", "v1/sessions/" + old.id).catch(() => {});
    state.session = {
      id: created.session_id,
      env: created.env,
      seed: created.seed,
      set: body.set || null,
      player: body.player || null,
      recording: created.recording,
      reward: 0,
      invalid: 0,
      steps: 0,
    };
    showGame(created.observation, created.info, false);
  } catch (err) {
    if (err.code === "set_complete" && old) changeScenario(); // back to choosing
    alertUser(err.message);
    if (err.status === 401) $("token-field").hidden = false;
  }
}

// ----- the episode -----------------------------------------------------------------

function showGame(observation, info, done) {
  const session = state.session;
  const env = state.envs.get(session.env);
  $("setup").hidden = true;
  $("game").hidden = false;
  $("end").hidden = true;
  $("game-title").textContent = `${env.title}, seed ${session.seed}`;
  $("rules-text").textContent = env.rules;
  $("rules").open = false;
  $("notice").textContent = "";
  $("command").disabled = false;
  const badge = $("badge");
  badge.hidden = !session.recording;
  if (session.recording) {
    const set = session.recording.set ? `, set ${session.recording.set}` : "";
    badge.textContent = `Recording: ${session.recording.player}${set}`;
  }
  render(observation, info);
  save();
  if (done) endEpisode(info);
  else $("command").focus({ preventScroll: true });
}

function render(observation, info) {
  const session = state.session;
  const env = state.envs.get(session.env);
  $("observation").textContent = observation;
  session.steps = info.steps_used;
  const wasted = session.invalid ? ` · ${session.invalid} wasted` : "";
  $("counters").textContent =
    `Step ${info.steps_used} of ${env.max_steps} · return ${formatNumber(session.reward)}${wasted}`;
  const list = $("valid");
  list.replaceChildren();
  for (const form of info.valid_commands || []) {
    const item = document.createElement("li");
    const [head, ...rest] = form.split(" (");
    if (COMMAND_FORM.test(head)) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "chip";
      button.textContent = head;
      button.dataset.fill = /[A-Z]{2,}|\bX\b|[|[]/.test(head) ? head.split(" ")[0] + " " : head;
      button.setAttribute("aria-label", "Use " + head);
      item.append(button, rest.length ? " (" + rest.join(" (") : "");
    } else item.append(form); // a note on the grammar, not a command to fill in
    list.append(item);
  }
}

function formatNumber(value) {
  return Number.isInteger(value) ? String(value) : value.toFixed(2);
}

async function sendCommand(event) {
  event.preventDefault();
  const input = $("command");
  const command = input.value.trim();
  const session = state.session;
  if (!session || input.disabled) return;
  if (!command) {
    $("notice").textContent = "Type a command first (an empty one would waste a turn).";
    return;
  }
  if (HELP_WORDS.has(command.toLowerCase())) {
    input.value = "";
    $("rules").open = true;
    $("notice").textContent = "The rules are open above; the valid commands are listed below. No turn was spent.";
    input.focus();
    return;
  }
  remember(command);
  input.disabled = true;
  try {
    const result = await api("POST", `v1/sessions/${session.id}/step`, { command });
    session.reward += result.reward;
    if (result.info.invalid_action) session.invalid += 1;
    input.value = "";
    render(result.observation, result.info);
    const game = $("game");
    if (game.getBoundingClientRect().top < 0) game.scrollIntoView(); // read it from its top
    $("notice").textContent = result.info.invalid_action
      ? `Not read, turn wasted: ${result.info.error}`
      : result.reward ? `Reward ${result.reward > 0 ? "+" : ""}${formatNumber(result.reward)}.` : "";
    save();
    if (result.terminated || result.truncated) {
      endEpisode(result.info, result.truncated && !result.terminated);
      return;
    }
  } catch (err) {
    alertUser(err.message);
    if (err.code === "unknown_session" || err.code === "episode_over") forget();
  } finally {
    if (!$("end").hidden) input.disabled = true;
    else {
      input.disabled = false;
      input.focus({ preventScroll: true });
    }
  }
}

async function endEpisode(info, outOfSteps) {
  const session = state.session;
  const title = info.success ? "Success" : outOfSteps || info.steps_left === 0 ? "Out of steps" : "Episode over";
  $("end-title").textContent = title;
  $("score").textContent =
    `Return ${formatNumber(session.reward)} in ${session.steps} steps` +
    (session.invalid ? `, ${session.invalid} of them wasted on unreadable commands.` : ".");
  $("command").disabled = true;
  $("again").textContent = session.set ? "Next seed of the set" : "Next seed";
  $("end").hidden = false;
  $("recorded").textContent = "";
  sessionStorage.removeItem(SAVED);
  $("again").focus();
  if (session.recording) {
    const query = `player=${encodeURIComponent(session.recording.player)}` +
      (session.recording.set ? `&set=${encodeURIComponent(session.recording.set)}` : "");
    try {
      const progress = await api("GET", "play/api/progress?" + query);
      const seeds = progress.recorded[session.env] || [];
      const total = progress.seeds.length ? ` (${seeds.length} of ${progress.seeds.length} seeds of the set)` : "";
      $("recorded").textContent = seeds.includes(session.seed)
        ? `Recorded in run ${progress.run}${total}.`
        : `Not recorded: this seed is already in run ${progress.run}.`;
    } catch (err) {
      $("recorded").textContent = "Could not check the recording: " + err.message;
    }
  }
}

function nextEpisode() {
  const session = state.session;
  const body = { env: session.env };
  if (session.player) body.player = session.player;
  if (session.set) body.set = session.set;
  else body.seed = session.seed + 1;
  openSession(body);
}

function changeScenario() {
  $("game").hidden = true;
  $("setup").hidden = false;
  $("badge").hidden = true;
  if (state.session) api("DELETE", "v1/sessions/" + state.session.id).catch(() => {});
  state.session = null;
  sessionStorage.removeItem(SAVED);
  showProgress();
  $("env").focus();
}

// ----- command history (arrow keys) -----------------------------------------------

function remember(command) {
  if (state.history[state.history.length - 1] !== command) state.history.push(command);
  state.history = state.history.slice(-200);
  state.historyAt = -1;
  sessionStorage.setItem("textenvs.play.history", JSON.stringify(state.history));
}

function onCommandKey(event) {
  const input = $("command");
  const history = state.history;
  if (event.key === "ArrowUp" && history.length) {
    event.preventDefault();
    state.historyAt = state.historyAt < 0 ? history.length - 1 : Math.max(0, state.historyAt - 1);
    input.value = history[state.historyAt];
  } else if (event.key === "ArrowDown" && state.historyAt >= 0) {
    event.preventDefault();
    state.historyAt += 1;
    if (state.historyAt >= history.length) {
      state.historyAt = -1;
      input.value = "";
    } else input.value = history[state.historyAt];
  } else if (event.key === "Escape") {
    input.value = "";
    state.historyAt = -1;
  }
}

// ----- reload: resume the running episode --------------------------------------------

function save() {
  if (state.session) sessionStorage.setItem(SAVED, JSON.stringify(state.session));
}

function forget() {
  sessionStorage.removeItem(SAVED);
}

async function resume() {
  const saved = JSON.parse(sessionStorage.getItem(SAVED) || "null");
  if (!saved || !state.envs.has(saved.env)) return false;
  try {
    const view = await api("GET", "v1/sessions/" + saved.id);
    if (view.done) return false;
    state.session = saved;
    showGame(view.observation, view.info, false);
    $("notice").textContent = "Resumed your episode.";
    return true;
  } catch (err) {
    forget();
    return false;
  }
}

// ----- start -----------------------------------------------------------------------

async function boot() {
  try {
    if (!(await loadSetup())) return;
    alertUser("");
    fillSetupForm();
    if (!(await resume())) $("start").focus();
  } catch (err) {
    alertUser(err.message);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("setup").addEventListener("submit", startEpisode);
  $("set").addEventListener("change", syncSeedField);
  $("env").addEventListener("change", showProgress);
  $("player").addEventListener("change", showProgress);
  $("command-form").addEventListener("submit", sendCommand);
  $("command").addEventListener("keydown", onCommandKey);
  $("again").addEventListener("click", nextEpisode);
  $("change").addEventListener("click", changeScenario);
  $("wrap").addEventListener("change", (e) => $("observation").classList.toggle("nowrap", !e.target.checked));
  $("valid").addEventListener("click", (event) => {
    const button = event.target.closest("button[data-fill]");
    if (!button) return;
    const input = $("command");
    input.value = button.dataset.fill;
    input.focus();
    input.setSelectionRange(input.value.length, input.value.length);
  });
  boot();
});
