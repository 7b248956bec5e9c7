# One image for web, worker, beat and the simulated collector.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app

COPY requirements.txt ./
RUN pip install --no-cache-dir -r requirements.txt

COPY . .
RUN DEBUG=1 SECRET_KEY=build-only-collectstatic-key-0123456789abcdefghijklmnopqrstu \
    python manage.py collectstatic --noinput \
    && useradd --system --home /app wattledger \
    && mkdir -p /app/var && chown -R wattledger /app/var

USER wattledger
EXPOSE 8000
CMD ["gunicorn", "-c", "config/gunicorn.conf.py", "config.wsgi"]
