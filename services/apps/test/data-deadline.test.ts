import { expect, test } from "bun:test";
import { DataError } from "../src/http/answers.ts";
import { withDeadline } from "@hatch/platform";
import { documentTooLate } from "../src/http/caller.ts";

// A document request whose database does not answer (restarting) is told so in time instead of hanging.
test("an answer past its deadline becomes unavailable with Retry-After; one in time passes through", async () => {
  const late = await withDeadline(new Promise<Response>(() => {}), 20, documentTooLate).catch(
    (error: unknown) => error,
  );
  expect(late).toBeInstanceOf(DataError);
  expect((late as DataError).code).toBe("unavailable");
  expect((late as DataError).message).toContain("may or may not have taken effect");
  expect((late as DataError).headers["Retry-After"]).toBe("5");
  const soon = await withDeadline(Promise.resolve(new Response("ok")), 1_000, documentTooLate);
  expect(await soon.text()).toBe("ok");
});
