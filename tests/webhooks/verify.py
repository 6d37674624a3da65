"""Verifies one webhook delivery with libraries nobody in this project wrote: Standard
Webhooks' reference library (`standardwebhooks`) over the `webhook-*` headers, and Stripe's
`WebhookSignature.verify_header` over `X-Service-Signature`.

Reads `{"body": str, "headers": {name: value}, "secret": str}` on stdin and prints
`{"standard": bool, "stripe": bool}`: whether each accepts the delivery as signed by `secret`.
Run by `tests/it/chat.rs` from the toolchain's virtual environment (`cargo xtask test`
installs both libraries).
"""

import base64
import json
import sys

import standardwebhooks
import stripe


def main():
    delivery = json.load(sys.stdin)
    body = delivery["body"]
    headers = {name.lower(): value for name, value in delivery["headers"].items()}
    secret = delivery["secret"]

    # The key is the secret's UTF-8 bytes: the library takes it base64-encoded.
    webhook = standardwebhooks.Webhook(base64.b64encode(secret.encode()).decode())
    try:
        webhook.verify(body, headers)
        standard = True
    except standardwebhooks.WebhookVerificationError:
        standard = False

    try:
        stripe.WebhookSignature.verify_header(
            body, headers["x-service-signature"], secret, tolerance=300
        )
        stripe_accepts = True
    except stripe.SignatureVerificationError:
        stripe_accepts = False

    print(json.dumps({"standard": standard, "stripe": stripe_accepts}))


if __name__ == "__main__":
    main()
