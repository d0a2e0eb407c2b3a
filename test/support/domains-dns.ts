import dns2 from "dns2";

// An authoritative DNS server on loopback that a test controls: it answers for the names it was given (AA set),
// NXDOMAIN for any other name, an empty NOERROR for a known name without that type, and follows a CNAME inside its
// own data the way an authoritative server does (the CNAME, then the target's records); `*.<name>` is a wildcard. The domains service's
// checks (node:dns Resolver with DNS_SERVERS) and Pebble (-dnsserver) both ask it.

export type TestRecordType = "A" | "AAAA" | "CNAME" | "TXT";

export interface TestDnsServer {
  /** `127.0.0.1:<port>`, for DNS_SERVERS and Pebble's -dnsserver. */
  readonly address: string;
  readonly port: number;
  /** Adds a record, as a person would at their DNS provider. */
  add(name: string, type: TestRecordType, value: string): void;
  /** Removes every record of `type` at `name` (every type when left out). */
  remove(name: string, type?: TestRecordType): void;
  /** How many questions it answered, by `name type` (a test can tell a check really asked). */
  asked(name: string, type: TestRecordType): number;
  close(): Promise<void>;
}

const { Packet } = dns2;
const TYPES: Record<TestRecordType, number> = {
  A: Packet.TYPE.A,
  AAAA: Packet.TYPE.AAAA,
  CNAME: Packet.TYPE.CNAME,
  TXT: Packet.TYPE.TXT,
};

const norm = (name: string) => name.toLowerCase().replace(/\.$/, "");

export async function startTestDns(): Promise<TestDnsServer> {
  const records = new Map<string, { type: TestRecordType; value: string }[]>();
  const counts = new Map<string, number>();

  function resource(name: string, type: TestRecordType, value: string) {
    const base = { name, type: TYPES[type], class: Packet.CLASS.IN, ttl: 1 };
    if (type === "A" || type === "AAAA") return { ...base, address: value };
    if (type === "CNAME") return { ...base, domain: value };
    return { ...base, data: value };
  }

  /** The records at `name`, or at the wildcard `*.<parent>` when `name` has none (RFC 4592, simplified). */
  function at(name: string): { type: TestRecordType; value: string }[] | undefined {
    return records.get(name) ?? records.get(`*.${name.slice(name.indexOf(".") + 1)}`);
  }

  function answer(name: string, qtype: number, depth = 0): object[] {
    const here = at(name) ?? [];
    const exact = here.filter((r) => TYPES[r.type] === qtype);
    if (exact.length > 0) return exact.map((r) => resource(name, r.type, r.value));
    const alias = here.find((r) => r.type === "CNAME");
    if (!alias || depth > 8) return [];
    return [resource(name, "CNAME", alias.value), ...answer(norm(alias.value), qtype, depth + 1)];
  }

  const server = dns2.createServer({
    udp: true,
    handle(request, send): void {
      const response = Packet.createResponseFromRequest(request);
      response.header.aa = 1;
      const [question] = request.questions;
      if (!question) {
        send(response);
        return;
      }
      const name = norm(question.name);
      const typeName = Object.entries(TYPES).find(([, code]) => code === question.type)?.[0];
      if (typeName) counts.set(`${name} ${typeName}`, (counts.get(`${name} ${typeName}`) ?? 0) + 1);
      if (!at(name)) {
        response.header.rcode = Packet.RCODE.NXDOMAIN;
        send(response);
        return;
      }
      response.answers.push(...(answer(name, question.type) as typeof response.answers));
      send(response);
    },
  });
  const listening = await server.listen({ udp: { port: 0, address: "127.0.0.1" } });
  const port = listening.udp!.port;
  return {
    address: `127.0.0.1:${port}`,
    port,
    add(name, type, value) {
      const key = norm(name);
      records.set(key, [...(records.get(key) ?? []), { type, value: type === "CNAME" ? norm(value) : value }]);
    },
    remove(name, type) {
      const key = norm(name);
      const left = type ? (records.get(key) ?? []).filter((r) => r.type !== type) : [];
      if (left.length > 0) records.set(key, left);
      else records.delete(key);
    },
    asked: (name, type) => counts.get(`${norm(name)} ${type}`) ?? 0,
    close: () => server.close(),
  };
}
