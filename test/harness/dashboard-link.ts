// The link `cotal web` prints carries the dashboard's token (`http://host:port/?token=…`): tests
// read through it as the starting user does — the page by the link (the server moves the token
// into a cookie), API calls with the token as a bearer header.

/** A printed dashboard link, split into the base URL and its token. */
export interface DashboardLink {
  /** `http://host:port/?token=…`, as printed: what a person opens. */
  link: string;
  /** `http://host:port/`: build paths on this. */
  base: string;
  token: string;
}

/** Parse the `dashboard: <link>` line of `cotal web`'s output; throws when there is none or it has no token. */
export function dashboardLink(output: string): DashboardLink {
  const printed = /dashboard: (\S+)/.exec(output)?.[1];
  if (!printed) throw new Error(`no "dashboard: <link>" line in:\n${output}`);
  const u = new URL(printed);
  const token = u.searchParams.get("token");
  if (!token) throw new Error(`the printed dashboard link has no token: ${printed}`);
  return { link: printed, base: `${u.origin}/`, token };
}

/** fetch() a dashboard path with its token. */
export function fetchDashboard(d: DashboardLink, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(new URL(path, d.base), { ...init, headers: { ...(init.headers as Record<string, string> | undefined), Authorization: `Bearer ${d.token}` } });
}
