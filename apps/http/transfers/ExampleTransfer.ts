// The transfer request the reference shows (TransfersApi's example) and its code samples send (CodeSamples).
export const ExampleTransferRequest = {
  payment_transfer: {
    reference: "order-1001",
    amount: "12.30",
    currency: "USD",
    sender_account_uri: "pan:4242424242424242;exp=2030-12;cvc=737",
    sender: { first_name: "Ann", email: "ann@example.com" },
    recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: "merchant_1" }
  }
}
