// The envelope client: one WebSocket to ws://<this origin>/ws speaking codeflux.v1+json.
//
// Each text message is a codeflux.v1.Frame in canonical proto3 JSON. A call opens a stream id (never
// reused); the server answers with zero or more `message` frames and exactly one `status`. int64 fields
// arrive as JSON strings and are kept as strings here.

export const SUBPROTOCOL = "codeflux.v1+json";
const TYPE_PREFIX = "type.googleapis.com/codeflux.v1.";

export const Code = Object.freeze({
  OK: 0, CANCELLED: 1, UNKNOWN: 2, INVALID_ARGUMENT: 3, DEADLINE_EXCEEDED: 4, NOT_FOUND: 5,
  PERMISSION_DENIED: 7, RESOURCE_EXHAUSTED: 8, FAILED_PRECONDITION: 9, ABORTED: 10, UNIMPLEMENTED: 12,
  INTERNAL: 13, UNAVAILABLE: 14, UNAUTHENTICATED: 16,
});

// Request message of every method the client calls ("Service/Method" → request type).
const REQUEST_TYPES = {
  "WorkspaceService/GetOverview": "GetOverviewRequest",
  "WorkspaceService/InspectRepository": "InspectRepositoryRequest",
  "WorkspaceService/CreateDemoRepository": "CreateDemoRepositoryRequest",
  "TaskService/ListTasks": "ListTasksRequest",
  "TaskService/GetTask": "GetTaskRequest",
  "TaskService/CreateTask": "CreateTaskRequest",
  "TaskService/DraftPlan": "DraftPlanRequest",
  "TaskService/ApprovePlan": "ApprovePlanRequest",
  "TaskService/SendBackPlan": "SendBackPlanRequest",
  "TaskService/AnswerQuestion": "AnswerQuestionRequest",
  "TaskService/EditPlanExamples": "EditPlanExamplesRequest",
  "TaskService/StartTask": "StartTaskRequest",
  "TaskService/RetryTask": "RetryTaskRequest",
  "TaskService/PauseTask": "TaskActionRequest",
  "TaskService/ResumeTask": "TaskActionRequest",
  "TaskService/CancelTask": "TaskActionRequest",
  "TaskService/SetBudget": "SetBudgetRequest",
  "TaskService/GetTimeline": "GetTimelineRequest",
  "TaskService/GetToolActivity": "GetToolActivityRequest",
  "TaskService/GetTaskGraph": "GetTaskGraphRequest",
  "ApprovalService/ListPending": "ListPendingRequest",
  "ApprovalService/Decide": "DecideRequest",
  "ApprovalService/ListRepositoryApprovals": "ListRepositoryApprovalsRequest",
  "ApprovalService/RevokeRepositoryApproval": "RevokeRepositoryApprovalRequest",
  "ReviewService/GetReview": "GetReviewRequest",
  "ReviewService/ListStages": "ListStagesRequest",
  "ReviewService/AcceptChange": "AcceptChangeRequest",
  "ReviewService/RejectChange": "RejectChangeRequest",
  "RecoveryService/ListRecovery": "ListRecoveryRequest",
  "RecoveryService/RecordOutcome": "RecordOutcomeRequest",
  "RecoveryService/TakeAction": "RecoveryActionRequest",
  "SettingsService/GetSettings": "GetSettingsRequest",
  "SettingsService/SetBudgetDefaults": "SetBudgetDefaultsRequest",
  "SettingsService/SetClarificationPolicy": "SetClarificationPolicyRequest",
  "SettingsService/SetProviderChoice": "SetProviderChoiceRequest",
  "SettingsService/StoreProviderKey": "StoreProviderKeyRequest",
  "SettingsService/ApproveEndpoint": "ApproveEndpointRequest",
  "InstructionService/ListInstructionFiles": "ListInstructionFilesRequest",
  "InstructionService/ApproveInstructionFile": "InstructionFileDecisionRequest",
  "InstructionService/RevokeInstructionFile": "InstructionFileDecisionRequest",
  "DiagnosticsService/RunDoctor": "RunDoctorRequest",
  "DiagnosticsService/CreateBackup": "CreateBackupRequest",
  "MemoryService/List": "ListMemoryRequest",
  "MemoryService/Show": "ShowMemoryRequest",
  "MemoryService/Invalidate": "InvalidateMemoryRequest",
  "MemoryService/Confirm": "ConfirmMemoryRequest",
  "IncidentService/Report": "ReportIncidentRequest",
  "IncidentService/List": "ListIncidentsRequest",
  "IncidentService/Show": "ShowIncidentRequest",
  "IncidentService/Dismiss": "DismissIncidentRequest",
  "IncidentService/Propose": "ProposeIncidentTaskRequest",
  "SessionService/Subscribe": "SubscribeRequest",
  "SessionService/GetHead": "GetHeadRequest",
};

export class RpcError extends Error {
  constructor(code, safeMessage, detail) {
    super(safeMessage || `request failed (status ${code})`);
    this.name = "RpcError";
    this.code = code;
    this.safeMessage = safeMessage || "";
    this.detail = detail || {};
  }
}

function describeStatus(status) {
  const code = status.code || 0;
  const detail = status.detail || {};
  return new RpcError(code, status.safeMessage || detail.safeMessage || "", detail);
}

// Where a tab keeps its page key (launch.js puts it there); the upgrade offers it as a subprotocol next to
// the envelope's, so the session cookie alone opens nothing.
export const PAGE_KEY_STORAGE = "codeflux.pageKey";
// The task address a tab was on when it needed a new launch link: launch.js returns there after redeeming one.
export const RETURN_TO_STORAGE = "codeflux.returnTo";

export function rememberReturnTo(path) {
  try {
    sessionStorage.setItem(RETURN_TO_STORAGE, path);
  } catch {
    // no sessionStorage: the new link lands on "/"
  }
}
const PAGE_KEY_PROTOCOL = "codeflux.page.";

export function pageKey() {
  try {
    return sessionStorage.getItem(PAGE_KEY_STORAGE) || "";
  } catch {
    return "";
  }
}

export class RpcClient {
  constructor(url = `ws://${location.host}/ws`) {
    this.url = url;
    this.socket = null;
    this.opening = null;
    this.nextId = 1;
    this.streams = new Map();
    this.listeners = new Set();
    this.failedOpenListeners = new Set();
    this.connected = false;
  }

  // cb() whenever opening the socket fails (the coordinator stopped, or refused this tab's session).
  onOpenFailed(cb) {
    this.failedOpenListeners.add(cb);
    return () => this.failedOpenListeners.delete(cb);
  }

  // cb(connected: boolean) whenever the socket opens or closes.
  onConnection(cb) {
    this.listeners.add(cb);
    return () => this.listeners.delete(cb);
  }

  setConnected(value) {
    if (this.connected === value) return;
    this.connected = value;
    for (const cb of this.listeners) cb(value);
  }

  open() {
    if (this.socket && this.socket.readyState === WebSocket.OPEN) return Promise.resolve(this.socket);
    if (this.opening) return this.opening;
    this.opening = new Promise((resolve, reject) => {
      let socket;
      try {
        socket = new WebSocket(this.url, [SUBPROTOCOL, PAGE_KEY_PROTOCOL + pageKey()]);
      } catch (error) {
        this.opening = null;
        reject(new RpcError(Code.UNAVAILABLE, "could not connect to the coordinator"));
        return;
      }
      let opened = false;
      socket.addEventListener("open", () => {
        opened = true;
        this.socket = socket;
        this.opening = null;
        this.setConnected(true);
        resolve(socket);
      });
      socket.addEventListener("message", (event) => this.receive(event.data));
      socket.addEventListener("close", () => {
        if (!opened) {
          this.opening = null;
          reject(new RpcError(Code.UNAVAILABLE, "could not connect to the coordinator"));
          for (const cb of this.failedOpenListeners) cb();
          return;
        }
        if (this.socket === socket) this.socket = null;
        this.failAll(new RpcError(Code.UNAVAILABLE, "the connection to the coordinator was lost"));
        this.setConnected(false);
      });
    });
    return this.opening;
  }

  failAll(error) {
    const streams = [...this.streams.values()];
    this.streams.clear();
    for (const stream of streams) stream.finish(error);
  }

  receive(data) {
    let frame;
    try {
      frame = JSON.parse(data);
    } catch {
      return;
    }
    const stream = this.streams.get(Number(frame.streamId || 0));
    if (!stream) return;
    if (frame.message !== undefined) {
      stream.onMessage(frame.message);
    } else if (frame.status !== undefined) {
      this.streams.delete(stream.id);
      const code = frame.status.code || 0;
      stream.finish(code === Code.OK ? null : describeStatus(frame.status));
    }
  }

  send(frame) {
    if (!this.socket || this.socket.readyState !== WebSocket.OPEN) return false;
    this.socket.send(JSON.stringify(frame));
    return true;
  }

  // Open a stream. handlers: {onMessage(msg), onEnd(error|null)}. Returns {id, cancel()}.
  // The returned promise resolves once the call frame was sent.
  async start(method, request, handlers, { deadlineMs = 0 } = {}) {
    const type = REQUEST_TYPES[method];
    if (!type) throw new RpcError(Code.UNIMPLEMENTED, `the client does not know ${method}`);
    await this.open();
    const id = this.nextId++;
    let timer = null;
    const stream = {
      id,
      done: false,
      onMessage: (message) => { if (!stream.done) handlers.onMessage(message); },
      finish: (error) => {
        if (stream.done) return;
        stream.done = true;
        if (timer) clearTimeout(timer);
        handlers.onEnd(error);
      },
      cancel: () => {
        if (stream.done) return;
        this.send({ streamId: id, cancel: {} });
        this.streams.delete(id);
        stream.finish(new RpcError(Code.CANCELLED, "cancelled"));
      },
    };
    this.streams.set(id, stream);
    const call = { method: `/codeflux.v1.${method}`, request: { "@type": TYPE_PREFIX + type, ...request } };
    if (deadlineMs > 0) {
      call.deadlineMs = deadlineMs;
      timer = setTimeout(() => {
        if (stream.done) return;
        this.send({ streamId: id, cancel: {} });
        this.streams.delete(id);
        stream.finish(new RpcError(Code.DEADLINE_EXCEEDED, "the coordinator did not answer in time"));
      }, deadlineMs + 1000);
    }
    if (!this.send({ streamId: id, call })) {
      this.streams.delete(id);
      stream.finish(new RpcError(Code.UNAVAILABLE, "the connection to the coordinator was lost"));
    }
    return stream;
  }

  // A unary call: resolves with the reply message (its "@type" removed), rejects with RpcError.
  unary(method, request = {}, options = {}) {
    return new Promise((resolve, reject) => {
      let reply = null;
      this.start(method, request, {
        onMessage: (message) => { reply = message; },
        onEnd: (error) => {
          if (error) reject(error);
          else if (reply === null) reject(new RpcError(Code.INTERNAL, "the coordinator sent no reply"));
          else resolve(stripType(reply));
        },
      }, options).catch(reject);
    });
  }

  // A server stream with callbacks: onMessage(msg) for each message, onEnd(error|null) once.
  stream(method, request, onMessage, onEnd, options = {}) {
    return this.start(method, request, {
      onMessage: (message) => onMessage(stripType(message)),
      onEnd,
    }, options);
  }

  // A server stream as an async iterator (ends on OK status, throws RpcError otherwise).
  async *iterate(method, request, options = {}) {
    const queue = [];
    let wake = null;
    let ended = false;
    let failure = null;
    const notify = () => { if (wake) { wake(); wake = null; } };
    const stream = await this.stream(method, request, (message) => { queue.push(message); notify(); },
      (error) => { ended = true; failure = error; notify(); }, options);
    try {
      while (true) {
        if (queue.length > 0) { yield queue.shift(); continue; }
        if (ended) { if (failure) throw failure; return; }
        await new Promise((resolve) => { wake = resolve; });
      }
    } finally {
      stream.cancel();
    }
  }
}

function stripType(message) {
  const copy = { ...message };
  delete copy["@type"];
  return copy;
}
