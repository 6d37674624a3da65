declare module 'tessera:engine/realtime@0.3.0' {
  /**
   * Publishes an event of type `event-type` (as `events.publish`'s types: `message.created`)
   * with `data` (a JSON object, at most 64 KiB) to every subscriber of `topic` in the tenant
   * of the call.
   */
  export function publish(topic: string, eventType: string, data: string): void;
  /**
   * As `publish`, to the subscribers of `topic` who are `user-id` only: a topic every user
   * has one of, such as chat's `me` (each subscriber of `chat.me` hears what is theirs).
   */
  export function publishToUser(userId: string, topic: string, eventType: string, data: string): void;
  /**
   * Ends `user-id`'s subscriptions to `topic` on every host when the call commits (a member
   * removed from a conversation stops receiving it at once): each gets an `error` frame with
   * status 403 for the topic. A later subscription asks `authorize-subscription` again.
   */
  export function endSubscriptions(topic: string, userId: string): void;
}
