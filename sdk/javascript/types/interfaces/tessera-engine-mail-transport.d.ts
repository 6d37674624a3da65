declare module 'tessera:engine/mail-transport@0.3.0' {
  /**
   * Hands `mail` to the relay; `ok` once the relay accepted it. `err` with the reason when
   * no relay is configured, the engine is not allowed, or the relay refused or was
   * unreachable (the engine may retry later).
   */
  export function send(mail: OutgoingMail): void;
  export interface OutgoingMail {
    /**
     * `name@domain`, the envelope and header sender.
     */
    sender: string,
    /**
     * `name@domain` each, 1 to 100.
     */
    recipients: Array<string>,
    subject: string,
    /**
     * Plain text.
     */
    text: string,
    /**
     * Sent as the `Message-ID` header: the same id on a retry lets receivers drop duplicates.
     */
    messageId: string,
  }
}
