import { Resolver } from "node:dns/promises";

/** The DNS questions the checks ask; `node:dns` answers them in the service, tests may point it at their own server. */
export interface DnsLookup {
  txt(name: string): Promise<string[]>;
  cname(name: string): Promise<string[]>;
  a(name: string): Promise<string[]>;
  aaaa(name: string): Promise<string[]>;
}

/** No such name or no record of that type: an empty answer, not an error (the check reports what is missing). */
const EMPTY = new Set(["ENOTFOUND", "ENODATA", "ENONAME"]);

/** A real resolver (node:dns `Resolver`) asking `servers` (`host` or `host:port`), or the system's when empty. */
export function createDnsLookup(servers: string[], timeoutMs = 3_000): DnsLookup {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 2 });
  if (servers.length > 0) resolver.setServers(servers);
  const ask = async (question: () => Promise<string[]>): Promise<string[]> => {
    try {
      return await question();
    } catch (error) {
      if (EMPTY.has((error as { code?: string }).code ?? "")) return [];
      throw error;
    }
  };
  return {
    txt: (name) => ask(async () => (await resolver.resolveTxt(name)).map((chunks) => chunks.join(""))),
    cname: (name) => ask(() => resolver.resolveCname(name)),
    a: (name) => ask(() => resolver.resolve4(name)),
    aaaa: (name) => ask(() => resolver.resolve6(name)),
  };
}
