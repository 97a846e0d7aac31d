import { ApiError, authHeaders, type Problem } from '../../api/client.ts';
import { sessionStore } from '../../auth/session.ts';

/**
 * Posts a multipart form with XMLHttpRequest (fetch cannot report upload progress) and the
 * session's headers; `onProgress` gets the fraction of the body sent. Resolves with the status
 * and JSON answer; rejects with the API's problem for a refusal, like `unwrap`.
 */
export function uploadForm<T>(
  url: string,
  form: FormData,
  onProgress: (fraction: number) => void,
  signal?: AbortSignal,
): Promise<{ status: number; data: T }> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', url);
    for (const [name, value] of Object.entries(authHeaders())) xhr.setRequestHeader(name, value);
    xhr.setRequestHeader('accept', 'application/json');
    xhr.responseType = 'json';
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable && event.total > 0) onProgress(event.loaded / event.total);
    };
    xhr.onload = () => {
      const body = xhr.response as unknown;
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress(1);
        resolve({ status: xhr.status, data: body as T });
        return;
      }
      if (xhr.status === 401 && sessionStore.get()) {
        sessionStore.end('Your session is no longer valid. Sign in again.');
      }
      const problem =
        body && typeof body === 'object' && 'status' in body
          ? (body as Problem)
          : ({
              type: 'about:blank',
              title: xhr.statusText || 'Upload failed',
              status: xhr.status,
              detail: `The service answered ${xhr.status}.`,
              code: 'internal_error',
              request_id: xhr.getResponseHeader('x-request-id') ?? '',
            } as Problem);
      reject(new ApiError(xhr.status, problem));
    };
    xhr.onerror = () => reject(new Error('the upload did not reach the service'));
    xhr.onabort = () => reject(new DOMException('the upload was cancelled', 'AbortError'));
    signal?.addEventListener('abort', () => xhr.abort(), { once: true });
    xhr.send(form);
  });
}
