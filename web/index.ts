/** `cotal web`: a dashboard of one space, served over HTTP with live updates (SSE), writing as the person (writes.ts). */
export { bindScope, hostHeaderAllowed, DEFAULT_WEB_HOST, DEFAULT_WEB_PORT, type BindScope } from "./bind.js";
export { renderMarkdown, escapeHtml } from "./markdown.js";
export { isStuck, rosterRows, STUCK_AFTER_MS, type PendingMail, type RosterRow } from "./roster-rows.js";
export { MeshView, spawnerOf, type MeshViewOptions, type StateSnapshot, type AgentDetail, type FeedPost } from "./mesh-view.js";
export { serveDashboard, type Dashboard } from "./server.js";
export { newDashboardToken, TOKEN_PATTERN } from "./token.js";
export { TimelineFolder, type TimelineEntry } from "./timeline.js";
export { postCounts } from "./stores.js";
export { PersonWriter, PostBody, DmBody, InboxReadBody, type PersonWriterOptions, type InboxView, type WriteResult } from "./writes.js";
export { personReads, personRoutes, writeRoute, type ReadRoute, type StreamRoute, type WriteMode, type WriteRoute } from "./write-routes.js";
