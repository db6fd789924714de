import { describe, expect, it } from "vitest";
import { ExecInputError, parseExecInput } from "../../../src/api/exec/exec-input.ts";

describe("parseExecInput", () => {
  it("reads stdin and terminal sizes as Go's encoding/json does, keys in any case", () => {
    expect(parseExecInput('{"stdin":{"data":"aGk=","close":true}}')).toEqual({
      Stdin: { Data: "aGk=", Close: true },
      TtySize: null,
    });
    expect(parseExecInput('{"TTY_SIZE":{"Height":40,"width":120},"other":1}')).toEqual({
      Stdin: null,
      TtySize: { Height: 40, Width: 120 },
    });
    expect(parseExecInput("null")).toEqual({ Stdin: null, TtySize: null });
  });

  it("refuses what Go's decoder refuses, with its words", () => {
    expect(() => parseExecInput("not json")).toThrow(ExecInputError);
    expect(() => parseExecInput("[1]")).toThrow(
      "json: cannot unmarshal array into Go value of type drivers.ExecTaskStreamingRequest",
    );
    expect(() => parseExecInput('{"tty_size":{"height":"40"}}')).toThrow(
      "json: cannot unmarshal string into Go struct field ExecTaskStreamingRequest.tty_size.height of type int32",
    );
    expect(() => parseExecInput('{"stdin":{"data":"%%%"}}')).toThrow("illegal base64 data");
  });
});
