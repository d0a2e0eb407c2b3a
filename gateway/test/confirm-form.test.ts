import { describe, expect, test } from "bun:test";
import type { Question } from "@hatch/contracts";
import type { Params } from "../src/auth/index.ts";
import { parseAnswer, renderFields, soleBoolean } from "../src/confirm/form.ts";

const posted = (fields: Record<string, string>): Params => ({ get: (name) => fields[name], repeated: [] });

const schema: Question["schema"] = {
  type: "object",
  properties: {
    name: { type: "string", title: "App name", description: "Shown in the browser tab" },
    visibility: { type: "string", title: "Who can open it", enum: ["private", "public"], default: "private" },
    seats: { type: "integer", title: "Seats" },
    price: { type: "number", title: "Price" },
    renew: { type: "boolean", title: "Renew every year", default: true },
  },
  required: ["name", "visibility", "seats"],
};

describe("the confirm page's form", () => {
  test("a single yes/no question has no inputs: pressing Confirm is the answer", () => {
    const yesNo: Question["schema"] = {
      type: "object",
      properties: { confirm: { type: "boolean", title: "Delete it" } },
      required: ["confirm"],
    };
    expect(soleBoolean(yesNo)).toBe("confirm");
    expect(renderFields(yesNo, null).value).toBe("");
    expect(parseAnswer(yesNo, posted({}))).toEqual({ ok: true, answer: { confirm: true }, values: {} });
    expect(soleBoolean(schema)).toBeNull();
  });

  test("each field type renders as its input, in order, with defaults, required marks and escaping", () => {
    const markup = renderFields(schema, null).value;
    expect(markup).toContain(
      '<label>App name<span class="muted">Shown in the browser tab</span><input type="text" name="f.name" value="" required></label>',
    );
    expect(markup).toContain('<input type="radio" name="f.visibility" value="private" checked required> private');
    expect(markup).toContain('<input type="radio" name="f.visibility" value="public" required> public');
    expect(markup).toContain('<input type="number" name="f.seats" value="" step="1" required>');
    expect(markup).toContain('<input type="number" name="f.price" value="" step="any">');
    expect(markup).toContain('<input type="checkbox" name="f.renew" value="true" checked> Renew every year');
    const order = ["f.name", "f.visibility", "f.seats", "f.price", "f.renew"].map((name) => markup.indexOf(name));
    expect(order).toEqual([...order].sort((a, b) => a - b));
    const hostile: Question["schema"] = {
      type: "object",
      properties: { x: { type: "string", title: '<script>alert("x")</script>' } },
    };
    expect(renderFields(hostile, { x: '"><img src=x>' }).value).toBe(
      '<label>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;<input type="text" name="f.x" value="&quot;&gt;&lt;img src=x&gt;"></label>',
    );
  });

  test("a complete form becomes typed values; unchecked boxes are false; empty optional fields are left out", () => {
    const result = parseAnswer(
      schema,
      posted({ "f.name": " Recipes ", "f.visibility": "public", "f.seats": "3", "f.price": "" }),
    );
    expect(result).toEqual({
      ok: true,
      answer: { name: "Recipes", visibility: "public", seats: 3, renew: false },
      values: { name: " Recipes ", visibility: "public", seats: "3", price: "" },
    });
  });

  test("missing, foreign and malformed values are refused with what to fix, and the form keeps what was typed", () => {
    const result = parseAnswer(
      schema,
      posted({ "f.name": "", "f.visibility": "everyone", "f.seats": "2.5", "f.price": "cheap" }),
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error).toBe(
      "App name: please fill this in. Who can open it: choose one of private, public. Seats: enter a whole number. Price: enter a number.",
    );
    const again = renderFields(schema, result.values).value;
    expect(again).toContain('name="f.seats" value="2.5"');
    expect(again).toContain('<input type="checkbox" name="f.renew" value="true"> Renew every year');
  });
});
