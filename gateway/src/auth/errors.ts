/**
 * A local, expected failure whose message is written for the person in front of the form or the admin
 * script (duplicate email, weak password, unknown user). It never crosses the bus.
 */
export class AuthInputError extends Error {
  constructor(
    message: string,
    /** "email_taken": the sign-up page links to sign-in with it. */
    readonly kind: "email_taken" | "other" = "other",
  ) {
    super(message);
    this.name = "AuthInputError";
  }
}

/** Thrown by the body reader when a request is larger than config.maxBodyBytes; routes answer 413. */
export class BodyTooLargeError extends Error {
  constructor() {
    super("request body too large");
    this.name = "BodyTooLargeError";
  }
}
