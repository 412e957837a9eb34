/** The SDK client a publisher makes when it is given none. */
import { SQSClient } from "@aws-sdk/client-sqs";

/**
 * An `SQSClient` from the SDK's usual configuration. An endpoint set by the environment (`AWS_ENDPOINT_URL_SQS`,
 * `AWS_ENDPOINT_URL`: local mode's `up` prints them) is passed as the client's own: otherwise the SDK sends each
 * call to its `QueueUrl`'s host (`useQueueUrlAsEndpoint`), which an emulator's queue URLs name as AWS's.
 */
export function defaultSqs(env: Record<string, string | undefined> = process.env): SQSClient {
  const endpoint = env["AWS_ENDPOINT_URL_SQS"] || env["AWS_ENDPOINT_URL"];
  return new SQSClient(endpoint ? { endpoint } : {});
}
